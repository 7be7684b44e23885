"""The runner's stages, one module per kind of work (kgen.validate.runner lists them in order):

    setup.py        environment, importing the reference and the solution (its build), init arguments and
                    input shapes, the parameters (same-seed construction, state_dict)
    kernelbench.py  KernelBench's own protocol (forward only, atol=rtol=1e-4, 1e-2 at --precision fp16|bf16, the
                    reference's get_inputs())
    trials.py       forward and backward trials on fresh inputs (allclose, layout, input mutation, aliasing)
    modes.py        the eval-mode trial: both models in eval mode, one trial forward and backward
    determinism.py  two calls on one input, bitwise; library nondeterminism told apart from the solution's
    fp64.py         float64 arbitration of gradients and the float64 cross-check
    kernels.py      torch.profiler: which kernels forward and backward launch, the solution's share of them
    (kgen.validate.bench: the optional benchmark)
"""
