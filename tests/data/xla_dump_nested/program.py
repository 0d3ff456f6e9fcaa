"""The program of this dump: JAX_PLATFORMS=cpu XLA_FLAGS="--xla_dump_to=DIR
--xla_dump_hlo_pass_re=.*" python program.py (jax 0.10.2); the module_0002.jit_f files are kept."""

import jax
import jax.numpy as jnp
from jax import lax


def f(x, i, j):
    return lax.dynamic_slice(lax.dynamic_slice(x, (i,), (6,)), (j,), (2,))


print(jax.jit(f)(jnp.arange(8.0), -7, 0), f(jnp.arange(8.0), -7, 0))
