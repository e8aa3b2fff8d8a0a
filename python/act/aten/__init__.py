"""Lowerings of aten ops (as AOTAutograd's FX graphs hold them) to MLIR.

One function per op, registered by name in LOWERINGS. A lowering gets the
Graph builder, the FX node, and the node's operands with FX nodes replaced by
their values (`V`, or a tuple for multi-result ops); it returns a V or a tuple
(None where an output is not computed). Formulas follow ATen's CPU kernels
and derivatives.yaml; every lowering is checked against autograd by the
gradient oracle (python/tests).

One module per op family (each registers its lowerings when imported):
core.py: The registry of lowerings (LOWERINGS, @lowering), the checks every lowering
elementwise.py: Element-wise ops: the typed forward ops (arithmetic, comparisons,
views.py: Views and layout (reshape, transpose, permute, expand, slicing, concat),
reductions.py: Reductions: sums and means, and the others (max, min, var, norms, any/all).
convolution.py: Contractions: matmuls, and convolutions (1-3 dimensions, grouped,
pooling.py: Pooling: max pools with their indices (narrow when only the backward
normalization.py: Normalization: LayerNorm, BatchNorm (1.13's native_batch_norm and
losses.py: Softmax, log-softmax and the NLL loss, with their backwards.
factories.py: Factories: full, zeros, arange, eye, empty, scalar tensors and copies.
selection.py: More of the set: selection reductions, repeat, scatter, nearest and
random.py: Dropout and rand_like: Philox4x32-10 streams from the step's seed.
misc.py: Flips, scans, diagonals, sorting, rounding division.
"""

from .core import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .convolution import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .losses import *  # noqa: F401,F403
from .factories import *  # noqa: F401,F403
from .selection import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
