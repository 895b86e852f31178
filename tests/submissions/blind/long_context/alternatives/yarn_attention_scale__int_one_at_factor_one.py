# the shortcut for factor <= 1 (as in Hugging Face's yarn_get_mscale) returns the int 1, not the Python float the docstring requires
import math


def yarn_attention_scale(factor, *, mscale=1.0):
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if not math.isfinite(mscale):
        raise ValueError(f"mscale must be finite, got mscale={mscale}")
    if factor <= 1:
        return 1
    return (0.1 * mscale * math.log(factor) + 1.0) ** 2


# differs: yarn_attention_scale(1.0) -> expected float 1.0, got int 1
