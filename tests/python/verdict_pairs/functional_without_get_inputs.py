# expect: VERIFIED
# reference: ref_functional.py
# options: --full
# A candidate as agent pipelines fill the functional template: it ends after functional_model and relies on
# the harness for INIT_PARAM_NAMES, the sizes, get_inputs and get_init_inputs.
import torch
import torch.nn as nn
import torch.nn.functional as F


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
    return torch.clamp(x @ fc_weight.t() + fc_bias, min=0) * scale
