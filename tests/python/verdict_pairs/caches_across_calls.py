# expect: BUG evidence=call-history stage=trace reason~caches\ across\ calls
# reference: ref_conv.py
import torch
import torch.nn as nn

_CACHE = {}  # module-level: survives new instances, keyed on the input's shape


class ModelNew(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=1)

    def forward(self, x):
        key = tuple(x.shape)
        if key not in _CACHE:
            _CACHE[key] = torch.relu(self.conv(x))
        return _CACHE[key]
