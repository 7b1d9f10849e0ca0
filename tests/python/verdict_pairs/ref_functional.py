# reference of the functional-template pair: the task file as the harness holds it (sizes, get_inputs at the end)
import torch
import torch.nn as nn
import torch.nn.functional as F

INIT_PARAM_NAMES = ["in_features", "out_features", "scale"]
FORWARD_ARG_NAMES = ["x"]


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, *args):
        return functional_model(*args, **extract_state_kwargs(self))


def extract_state_kwargs(model):
    init = dict(zip(INIT_PARAM_NAMES, get_init_inputs()))
    return {"fc_weight": model.fc.weight, "fc_bias": model.fc.bias, "scale": init["scale"]}


def functional_model(x, *, fc_weight, fc_bias, scale):
    return torch.relu(F.linear(x, fc_weight, fc_bias) * scale)


batch_size = 2
in_features = 6
out_features = 3
scale = 2.0


def get_init_inputs():
    return [in_features, out_features, scale]


def get_inputs():
    return [torch.randn(batch_size, in_features)]
