# returns the paper's sqrt(1/t) = 0.1 * mscale * ln(factor) + 1 (Hugging Face's yarn_get_mscale) instead of its square, the factor on the scores
import math


def yarn_attention_scale(factor, *, mscale=1.0):
    if not 1.0 <= factor < math.inf:
        raise ValueError(f"factor must be finite and at least 1, got factor={factor}")
    if not math.isfinite(mscale):
        raise ValueError(f"mscale must be finite, got mscale={mscale}")
    return float(0.1 * mscale * math.log(factor) + 1.0)


# differs: yarn_attention_scale(4.0) -> expected float 1.2964769927807063, got float 1.138629436111989
