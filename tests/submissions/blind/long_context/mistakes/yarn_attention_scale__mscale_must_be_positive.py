# mscale required to be above 0 (ValueError for mscale <= 0), though the docstring only asks it to be finite
import math


def yarn_attention_scale(factor, *, mscale=1.0):
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if not 0.0 < mscale < math.inf:
        raise ValueError(f"mscale must be a finite positive number, got mscale={mscale}")
    root = 0.1 * mscale * math.log(factor) + 1.0
    return float(root * root)


# differs: yarn_attention_scale(4.0, mscale=-0.5) -> expected float 0.866175094027193, got ValueError
