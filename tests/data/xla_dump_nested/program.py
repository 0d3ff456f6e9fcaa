import jax, jax.numpy as jnp
from jax import lax
def f(x, i, j):
    return lax.dynamic_slice(lax.dynamic_slice(x, (i,), (6,)), (j,), (2,))
print(jax.jit(f)(jnp.arange(8.0), -7, 0), f(jnp.arange(8.0), -7, 0))
