"""Tensors in act's device memory, handed to PyTorch through DLPack.

A CUDA step's results live in act's pool of device blocks, owned by their
run (include/act-c/Step.h). DeviceTensor describes one (device pointer,
shape, dtype) and keeps its run alive; `torch.from_dlpack(t)` (or
`t.to_torch()`) makes a torch tensor of the same memory, no copy, which
keeps the run alive in turn until torch frees it. The capsule follows
DLPack's protocol (dlpack.h, version 0.x's DLManagedTensor): the consumer
renames it "used_dltensor" and calls the deleter; an unconsumed capsule
calls it when it dies.
"""

import ctypes

import numpy as np

# DLDeviceType
KDL_CPU, KDL_CUDA = 1, 2
# DLDataTypeCode
_CODES = {"f": 2, "i": 0, "u": 1, "b": 6}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ManagedTensor))
_ManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                           ("deleter", _DELETER)]

# What each exported capsule keeps alive (its structure, shape and owner),
# by the structure's address, until its deleter runs.
_alive = {}


@_DELETER
def _delete(managed):
    _alive.pop(ctypes.addressof(managed.contents), None)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    # Never consumed (still "dltensor"): the producer's deleter runs here.
    if _capsule_valid(capsule, b"dltensor"):
        address = _capsule_pointer(capsule, b"dltensor")
        _alive.pop(address, None)


def to_capsule(data, shape, dtype, owner, device=(KDL_CUDA, 0)):
    """A DLPack capsule of the row-major tensor at `data` (an address on
    `device`: (DLDeviceType, id)), keeping `owner` alive until the consumer
    lets it go."""
    dtype = np.dtype(dtype)
    if dtype.kind not in _CODES:
        raise TypeError(f"no DLPack type for {dtype}")
    managed = _ManagedTensor()
    dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    t = managed.dl_tensor
    t.data = data or None
    t.device = _Device(*device)
    t.ndim = len(shape)
    t.dtype = _DataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)
    t.shape = dims
    t.strides = None  # row-major
    t.byte_offset = 0
    managed.deleter = _delete
    address = ctypes.addressof(managed)
    _alive[address] = (managed, dims, owner)
    return _capsule_new(address, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class DeviceTensor:
    """A row-major tensor in device memory: its address, shape and NumPy
    dtype; `owner` (a run's memory) lives as long as it does. What a CUDA
    step's run gives, and what its arguments may be besides torch's CUDA
    tensors."""

    def __init__(self, data, shape, dtype, owner=None, device=(KDL_CUDA, 0)):
        self.data, self.shape, self.dtype = int(data), tuple(shape), np.dtype(dtype)
        self._owner, self._device = owner, device

    def data_ptr(self):
        return self.data

    def is_contiguous(self):
        return True

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):
        # act's runs are queued on the step's stream; a consumer on another
        # stream orders itself after it (torch does, given the stream).
        return to_capsule(self.data, self.shape, self.dtype, self, self._device)

    def to_torch(self):
        """A torch tensor of this memory (no copy)."""
        import torch.utils.dlpack
        return torch.utils.dlpack.from_dlpack(self.__dlpack__())

    def __repr__(self):
        return f"DeviceTensor(0x{self.data:x}, shape={self.shape}, dtype={self.dtype})"
