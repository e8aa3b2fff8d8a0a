"""act from Python: the exporter (act.export), the model zoo (act.zoo), the
oracle and tuner, and act.compile (a compiled, compressed training step;
act.training)."""


def compile(*args, **kwargs):
    """act.training.compile (imported on first use: it loads torch)."""
    from .training import compile as compile_step
    return compile_step(*args, **kwargs)


def __getattr__(name):
    """act.Module (act.module.Module: a module with act's compiled forward
    and backward inside autograd), imported on first use: it loads torch."""
    if name == "Module":
        from .module import Module
        return Module
    raise AttributeError(f"module 'act' has no attribute '{name}'")
