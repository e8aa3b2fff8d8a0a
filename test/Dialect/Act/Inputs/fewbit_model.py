"""The model of fewbit_joint.mlir and fewbit_split.mlir: GELU then SiLU, as
an outside user writes them (python3 -m act.export
test/Dialect/Act/Inputs/fewbit_model.py:factory --batch 2)."""

import torch, torch.nn as nn
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.a=nn.Linear(4,8); s.b=nn.Linear(8,8); s.c=nn.Linear(8,3)
    def forward(s,x):
        return s.c(nn.functional.silu(s.b(nn.functional.gelu(s.a(x)))))
def factory(batch):
    torch.manual_seed(0)
    return M(), torch.randn(batch,4), torch.randint(0,3,(batch,))
