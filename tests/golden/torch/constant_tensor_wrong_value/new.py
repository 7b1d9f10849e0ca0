# EXPECT: BUG
import torch
import torch.nn as nn

LIMIT = torch.tensor(0.4)  # the reference's constant is 0.5: outputs between 0.8 and 1.0 differ


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)

    def forward(self, x):
        return torch.minimum(self.conv(x), LIMIT) * 2.0
