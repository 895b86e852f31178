"""Reading past the training length: the RoPE frequencies of NTK-aware scaling, YaRN and Llama 3.

A RoPE model trained on L positions has seen each pair of coordinates turn through the angles t * theta_i of
positions t < L only. Read at 4L, its fast pairs (large theta_i, many turns within L) see nothing new, but its
slow pairs (small theta_i, less than one turn within L) reach angles they never saw. Position interpolation
(the second unit) divides every theta_i by the growth factor, which keeps every angle in range but crowds the
fast pairs, whose fine distinctions between neighbours the model relies on. The methods of this unit scale
each frequency by its own amount:

* NTK-aware scaling (bloc97, 2023) raises the base, so that the slowest pair is divided by the full factor
  and the fastest is not changed at all; its dynamic form (emozilla, 2023) raises it only as far as the
  current length needs.
* YaRN (Peng et al. 2023) interpolates the pairs that turn less than about once within L, keeps the pairs
  that turn many times, ramps linearly between, and sharpens the softmax with a temperature.
* Llama 3 (Meta, 2024) does the same by wavelength: long wavelengths divided by the factor, short ones kept,
  a smooth blend between.

Each function returns the inverse frequencies theta_i, one per pair; ``scaled_rope_scores`` applies any of
them with the second unit's rotation, ``apply_rotary``, given to you as the second unit's reference (it is
not graded again here).

Six tasks, each named after what it computes; the same names are the ``pytest -k`` words, the grader's
headings and the nbgrader grade ids:

    ntk_inverse_frequencies            ntk_inverse_frequencies
    dynamic_ntk_inverse_frequencies    dynamic_ntk_inverse_frequencies
    yarn_inverse_frequencies           yarn_inverse_frequencies
    yarn_attention_scale               yarn_attention_scale
    llama3_inverse_frequencies         llama3_inverse_frequencies
    scaled_rope_scores                 scaled_rope_scores

Conventions used everywhere: pair ``i`` counts from 0 to dh/2 - 1 and turns at theta_i = base ** (-2i / dh)
before any scaling; ``L`` is the trained length (``trained_length``); positions count from 0. Frequencies
are computed in float64 and rounded to float32 once, at the end. No Python loop over positions or pairs.
"""

import math

import torch

from solutions.rotary_alibi import apply_rotary  # the second unit's rotation, reused as it is


def ntk_inverse_frequencies(head_dim, *, base=10000.0, factor):
    """NTK-aware scaling: RoPE's inverse frequencies with the base raised, so that the slowest pair is interpolated.

        base' = base * factor ** (dh / (dh - 2))
        theta_i = base' ** (-2i / dh)        i = 0 .. dh/2 - 1

    Pair 0 keeps theta_0 = 1 (its exponent is 0), and the last pair, i = dh/2 - 1, gets exactly theta / factor:
    the exponent dh / (dh - 2) is chosen so. The pairs between are divided by factor ** (2i / (dh - 2)), less
    the faster they turn.

    Args:
        head_dim: dh, the size of one head; even, and at least 4 (the exponent divides by dh - 2).
        base: the unscaled base (10000 in LLaMA 1 and 2); a finite number above 1.
        factor: how much longer the context is read than it was trained (L_new / L); finite, at least 1.

    Returns:
        theta: (dh/2,) float32 on the CPU, one inverse frequency per pair.

    Raises:
        ValueError: if ``head_dim`` is odd or below 4, ``base`` is not a finite number above 1, or ``factor``
            is below 1 or not finite.

    Convention the grader expects: pair i's exponent is 2i / dh (the dimension 2i of the pair's first
    coordinate, not the pair's index i), as in ``rotary_angles`` of the second unit; computed in float64,
    rounded to float32 once.

    Worked example, dh = 4, base = 10000, factor = 4: dh / (dh - 2) = 2, so base' = 10000 * 4 ** 2 = 160000
    and theta = [160000 ** 0, 160000 ** (-1/2)] = [1.0, 0.0025]; without scaling [1.0, 0.01]: the slow pair
    is divided by 4, the fast one untouched.

    Paper: bloc97, "NTK-Aware Scaled RoPE allows LLaMA models to have extended (8k+) context size without any
    fine-tuning and minimal perplexity degradation", reddit r/LocalLLaMA, 2023; written up in Peng et al.,
    "YaRN: Efficient Context Window Extension of Large Language Models", 2023, section 3.1, equation 16.
    """
    ### BEGIN SOLUTION
    if head_dim < 4 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be even and at least 4 (the exponent is dh / (dh - 2)), got {head_dim}")
    if not 1 < base < math.inf:  # False for NaN too
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1 <= factor < math.inf:
        raise ValueError(f"factor must be a finite number of at least 1 (the context's growth), got factor={factor}")
    scaled_base = base * factor ** (head_dim / (head_dim - 2))
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float64)  # (dh/2,): 0, 2, 4, ...
    return (scaled_base ** (-two_i / head_dim)).to(torch.float32)  # (dh/2,)
    ### END SOLUTION


def dynamic_ntk_inverse_frequencies(head_dim, *, length, trained_length, base=10000.0, factor):
    """Dynamic NTK scaling: NTK-aware scaling whose factor grows with the length being read.

        s = max(1, factor * length / L - (factor - 1))        (L = trained_length)
        theta = ntk_inverse_frequencies(dh, base=base, factor=s)
              = (base * s ** (dh / (dh - 2))) ** (-2i / dh)

    Up to the trained length, s = 1 and the frequencies are RoPE's own, unscaled: a short text is read exactly
    as in training. Past it, s grows linearly with the length, with no ceiling: by ``factor`` for every further L
    (s = 1 + factor * (length - L) / L; at twice L with factor 2, s = 3). A model recomputes the frequencies
    whenever the text grows.

    Args:
        head_dim: dh, the size of one head; even, and at least 4.
        length: the current sequence length (the largest position + 1); a positive integer.
        trained_length: L, the length the model was trained on; a positive integer.
        base: the unscaled base; a finite number above 1.
        factor: how fast s grows past L: by ``factor`` for every further L; finite, at least 1.

    Returns:
        theta: (dh/2,) float32 on the CPU.

    Raises:
        ValueError: if ``head_dim`` is odd or below 4, ``base`` is not a finite number above 1, ``factor`` is
            below 1 or not finite, or ``length`` or ``trained_length`` is below 1, at every length (a short
            length too).

    Convention the grader expects: Hugging Face's ``dynamic`` rope type, whose length is never taken below L:
    for length <= L the output is the unscaled theta_i = base ** (-2i / dh), for every factor. You may call
    ``ntk_inverse_frequencies`` (while this task is graded, the grader puts a stand-in of its own in its place,
    so that a mistake there is not charged here again).

    Worked example, dh = 4, base = 10000, factor = 2, L = 2048:
        length = 1000 or 2048:  s = 1,  theta = [1.0, 0.01]
        length = 4096:          s = 2 * 2 - 1 = 3,  base' = 10000 * 3 ** 2 = 90000,  theta = [1.0, 0.0033333]

    Paper: emozilla, "Dynamically Scaled RoPE further increases performance of long context LLaMA with zero
    fine-tuning", reddit r/LocalLLaMA, 2023; Peng et al., YaRN, 2023, section 3.3 ("Dynamic NTK").
    """
    ### BEGIN SOLUTION
    if not 1 <= factor < math.inf:
        raise ValueError(f"factor must be a finite number of at least 1, got factor={factor}")
    if length < 1 or trained_length < 1:
        raise ValueError(f"length and trained_length must be 1 or more, got length={length}, "
                         f"trained_length={trained_length}")
    # At or below the trained length the factor is 1: the model reads as it was trained.
    grown = max(1.0, factor * length / trained_length - (factor - 1))
    return ntk_inverse_frequencies(head_dim, base=base, factor=grown)  # (dh/2,)
    ### END SOLUTION


def yarn_inverse_frequencies(head_dim, *, base=10000.0, factor, trained_length, beta_fast=32.0, beta_slow=1.0,
                             truncate=True):
    """YaRN's NTK-by-parts interpolation: each pair between its own and its interpolated frequency, by how often it
    turns within the trained length.

        theta_i = base ** (-2i / dh)                                   the unscaled frequencies
        pair(beta) = dh * ln(L / (2 pi beta)) / (2 ln base)           the pair that turns beta times within L
        low  = max(floor(pair(beta_fast)), 0)                          (no floor or ceil if truncate=False)
        high = min(ceil(pair(beta_slow)), dh - 1)
        high = high + 0.001 where high == low, after the clamps       (a step at low, not 0 / 0)
        ramp_i = clamp((i - low) / (high - low), 0, 1)
        theta'_i = (1 - ramp_i) * theta_i + ramp_i * theta_i / factor

    Pair i has the wavelength 2 pi / theta_i and turns L theta_i / (2 pi) times within L; pair(beta) solves
    "turns beta times" for i. Pairs below ``low`` turn more than beta_fast times: they keep their frequency
    (extrapolation: their angles within L already cover every turn). Pairs above ``high`` turn less than
    beta_slow times: they are divided by the factor (interpolation, as in position interpolation). Between,
    a straight ramp. The formula decides where the prose and it part: where the clamps leave ``high`` below
    ``low`` (with truncation, an L of 2 pi beta_fast base ** 2 or more, or of a few positions with the betas
    close together), ramp_i is still the clamp of the quotient as written.

    Args:
        head_dim: dh, the size of one head; even and positive.
        base: the unscaled base; a finite number above 1.
        factor: the context's growth, L_new / L; finite, at least 1.
        trained_length: L, the length the model was trained on (Hugging Face's
            ``original_max_position_embeddings``); a positive integer.
        beta_fast: the number of turns above which a pair keeps its frequency (32 in the paper); finite, above 0.
        beta_slow: the number of turns below which a pair is interpolated (1 in the paper); finite, above 0 and
            at most ``beta_fast``.
        truncate: whether ``low`` and ``high`` are rounded outwards to whole pairs (floor and ceil), as the
            paper's code does; False keeps them fractional.

    Returns:
        theta: (dh/2,) float32 on the CPU.

    Raises:
        ValueError: if ``head_dim`` is odd or not positive, ``base`` is not a finite number above 1, ``factor``
            is below 1 or not finite, ``trained_length`` is below 1, or the betas are not finite and above 0
            with beta_slow <= beta_fast.

    Convention the grader expects: Hugging Face's ``yarn`` rope type: ``low`` comes from beta_fast (many turns:
    a small pair index), ``high`` from beta_slow; ``low`` is clamped at 0 and ``high`` at dh - 1 (not dh/2 - 1:
    the clamp of the YaRN authors' code); the ramp runs over the pair index i = 0 .. dh/2 - 1; computed in
    float64, rounded to float32 once. The attention temperature is ``yarn_attention_scale``'s.

    Worked example, dh = 8, base = 10000, factor = 4, L = 2048, the default betas:
        theta = [1, 0.1, 0.01, 0.001]; pair(32) = 1.008 -> low = 1; pair(1) = 2.513 -> high = 3
        ramp = [0, 0, 0.5, 1]  ->  theta' = [1.0, 0.1, 0.00625, 0.00025]

    Paper: Peng, Quesnelle, Fan and Shippole, "YaRN: Efficient Context Window Extension of Large Language
    Models", 2023, section 3.2 ("NTK-by-parts" interpolation, equations 17 and 18; the bounds as in its code).
    """
    ### BEGIN SOLUTION
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be a positive even number, got head_dim={head_dim}")
    if not 1 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1 <= factor < math.inf:
        raise ValueError(f"factor must be a finite number of at least 1, got factor={factor}")
    if trained_length < 1:
        raise ValueError(f"trained_length must be 1 or more, got trained_length={trained_length}")
    if not (0 < beta_slow <= beta_fast < math.inf):
        raise ValueError(f"beta_fast and beta_slow must be finite numbers above 0 with beta_slow <= beta_fast, got "
                         f"beta_fast={beta_fast}, beta_slow={beta_slow}")

    def pair_turning(beta):  # the (fractional) pair index that turns beta times within trained_length
        return head_dim * math.log(trained_length / (2 * math.pi * beta)) / (2 * math.log(base))

    low, high = pair_turning(beta_fast), pair_turning(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001  # a step at low, not a division by zero
    pair = torch.arange(head_dim // 2, dtype=torch.float64)  # (dh/2,): i
    theta = base ** (-2 * pair / head_dim)  # (dh/2,)
    ramp = ((pair - low) / (high - low)).clamp(0, 1)  # (dh/2,): 0 keeps theta, 1 divides it by the factor
    return ((1 - ramp) * theta + ramp * theta / factor).to(torch.float32)  # (dh/2,)
    ### END SOLUTION


def yarn_attention_scale(factor, *, mscale=1.0):
    """YaRN's attention temperature, as the number that multiplies every attention score.

        sqrt(1 / t) = 0.1 * mscale * ln(factor) + 1
        scale = 1 / t = (0.1 * mscale * ln(factor) + 1) ** 2

    Interpolated positions crowd the angles closer together, and the softmax over many more keys grows flatter;
    YaRN sharpens it again with a temperature t < 1 on the logits, softmax(q . k / (t sqrt(dh))). At factor 1
    nothing is scaled, and the scale is 1.

    Args:
        factor: the context's growth, L_new / L; finite, at least 1.
        mscale: multiplies the logarithm (1 in the paper; DeepSeek's configurations set others); finite.

    Returns:
        scale: a Python float, the factor on the scores.

    Raises:
        ValueError: if ``factor`` is below 1 or not finite, or ``mscale`` is not finite.

    Convention the grader expects: the factor on the scores, 1/t: the square of the paper's sqrt(1/t). Hugging
    Face's ``yarn_get_mscale(factor, mscale)`` returns sqrt(1/t) itself, and multiplies it into cos and sin, so
    into the query and the key each: the scores get its square, this number. ``scaled_rope_scores`` multiplies
    the scores by it once.

    Worked example: factor = 4 gives sqrt(1/t) = 0.1 ln 4 + 1 = 1.138629, so scale = 1.296477; factor = 16
    gives 1.631390; factor = 1 gives 1.0.

    Paper: Peng et al., YaRN, 2023, section 3.4 (equation 22: sqrt(1/t) = 0.1 ln(s) + 1).
    """
    ### BEGIN SOLUTION
    if not 1 <= factor < math.inf:
        raise ValueError(f"factor must be a finite number of at least 1, got factor={factor}")
    if not math.isfinite(mscale):
        raise ValueError(f"mscale must be a finite number, got mscale={mscale}")
    root = 0.1 * mscale * math.log(factor) + 1.0  # sqrt(1/t): what q and k are each multiplied by
    return root * root
    ### END SOLUTION


def llama3_inverse_frequencies(head_dim, *, base=500000.0, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                               trained_length=8192):
    """Llama 3's frequency scaling: each pair by its wavelength, long ones interpolated, short ones kept, a blend
    between.

        theta_i = base ** (-2i / dh),   wavelength_i = 2 pi / theta_i
        wavelength_i < L / high_freq_factor:    theta'_i = theta_i                      (fast pairs: kept)
        wavelength_i > L / low_freq_factor:     theta'_i = theta_i / factor             (slow pairs: interpolated)
        otherwise, with smooth_i = (L / wavelength_i - low_freq_factor) / (high_freq_factor - low_freq_factor):
                                                theta'_i = (1 - smooth_i) * theta_i / factor + smooth_i * theta_i

    L / wavelength_i is how many times pair i turns within L; smooth_i runs from 0 at L / low_freq_factor to 1
    at L / high_freq_factor, so theta' is continuous at both thresholds.

    Args:
        head_dim: dh, the size of one head; even and positive.
        base: the unscaled base (500000 in Llama 3); a finite number above 1.
        factor: the division of the slow pairs (8 in Llama 3.1); finite, at least 1.
        low_freq_factor: L / low_freq_factor is the longest wavelength kept out of full interpolation (1 in
            Llama 3.1); finite, above 0.
        high_freq_factor: L / high_freq_factor is the longest wavelength kept as it is (4 in Llama 3.1); finite,
            above ``low_freq_factor``.
        trained_length: L, the length the model was trained on (8192 in Llama 3; Hugging Face's
            ``original_max_position_embeddings``); a positive integer.

    Returns:
        theta: (dh/2,) float32 on the CPU.

    Raises:
        ValueError: if ``head_dim`` is odd or not positive, ``base`` is not a finite number above 1, ``factor``
            is below 1 or not finite, ``low_freq_factor`` is not finite and above 0, ``high_freq_factor`` is not
            finite and above ``low_freq_factor``, or ``trained_length`` is below 1.

    Convention the grader expects: Hugging Face's ``llama3`` rope type, whose thresholds are strict: a wavelength
    equal to a threshold is in the blend (where the blend gives the same value); computed in float64, rounded
    to float32 once.

    Worked example, dh = 8 with the defaults (base 500000, factor 8, low 1, high 4, L = 8192): the thresholds
    are 8192 / 4 = 2048 and 8192 / 1 = 8192;
        theta      = [1.0, 0.037606, 0.0014142, 5.3183e-05]
        wavelength = [6.28, 167.1, 4442.9, 118144]    (kept, kept, blend, interpolated)
        smooth_2   = (8192 / 4442.9 - 1) / 3 = 0.28128
        theta'     = [1.0, 0.037606, 0.00052485, 6.6479e-06]

    Paper: Llama Team, AI @ Meta, "The Llama 3 Herd of Models", 2024 (the scaling as released in the Llama 3.1
    code, ``apply_scaling``).
    """
    ### BEGIN SOLUTION
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError(f"head_dim must be a positive even number, got head_dim={head_dim}")
    if not 1 < base < math.inf:
        raise ValueError(f"base must be a finite number above 1, got base={base}")
    if not 1 <= factor < math.inf:
        raise ValueError(f"factor must be a finite number of at least 1, got factor={factor}")
    if not 0 < low_freq_factor < high_freq_factor < math.inf:
        raise ValueError(f"need 0 < low_freq_factor < high_freq_factor, both finite, got low_freq_factor="
                         f"{low_freq_factor}, high_freq_factor={high_freq_factor}")
    if trained_length < 1:
        raise ValueError(f"trained_length must be 1 or more, got trained_length={trained_length}")
    two_i = torch.arange(0, head_dim, 2, dtype=torch.float64)  # (dh/2,)
    theta = base ** (-two_i / head_dim)  # (dh/2,)
    wavelength = 2 * math.pi / theta  # (dh/2,)
    smooth = (trained_length / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)  # (dh/2,)
    blended = (1 - smooth) * theta / factor + smooth * theta  # (dh/2,)
    scaled = torch.where(wavelength > trained_length / low_freq_factor, theta / factor, blended)  # (dh/2,)
    return torch.where(wavelength < trained_length / high_freq_factor, theta, scaled).to(torch.float32)  # (dh/2,)
    ### END SOLUTION


def scaled_rope_scores(q, k, inverse_frequencies, *, attention_scale=1.0, positions_q=None, positions_k=None):
    """Attention scores of queries and keys rotated at the given frequencies, times an attention scale.

        q'[b, h, m] = R(m) q[b, h, m],   k'[b, h, n] = R(n) k[b, h, n]
        scores[b, h, m, n] = attention_scale / sqrt(dh) * q'[b, h, m] . k'[b, h, n]

    where R(t) turns pair i of a vector by the angle t * inverse_frequencies[i], counter-clockwise, as the
    second unit's ``apply_rotary`` does. Any method of this unit plugs in through ``inverse_frequencies``:
    ``ntk_inverse_frequencies(...)``, ``yarn_inverse_frequencies(...)`` with ``attention_scale=
    yarn_attention_scale(factor)``, ``llama3_inverse_frequencies(...)``; RoPE's own frequencies and position
    interpolation (theta / factor) too.

    Args:
        q: (B, H, Lq, dh) float queries.
        k: (B, H, Lk, dh) keys, of q's dtype.
        inverse_frequencies: (dh/2,) float, pair i's angle per position.
        attention_scale: multiplies every score, on top of 1/sqrt(dh) (YaRN's 1/t); a number above 0;
            default 1.0.
        positions_q: (Lq,) integer or float positions of the queries (or a shape that broadcasts to
            (B, H, Lq)); default ``arange(Lq)``.
        positions_k: (Lk,) positions of the keys (or a shape that broadcasts to (B, H, Lk)); default
            ``arange(Lk)``.

    ``inverse_frequencies`` and the positions may be on another device than q and k (the CPU, where this
    unit's functions make the frequencies): the rotation is done on q's device.

    Returns:
        scores: (B, H, Lq, Lk), the dtype and device of ``q``.

    Raises:
        ValueError: if dh is odd, q and k differ in dh, ``inverse_frequencies`` is not of shape (dh/2,), or a
            positions tensor does not end in Lq (Lk) entries.

    Convention the grader expects: the "rotate half" layout of GPT-NeoX, LLaMA and Hugging Face: pair i is
    ``(x[i], x[i + dh/2])``, and the frequencies of every function of this unit are in that order. The angles
    t * theta_i are computed in float64 (a float32 product loses the fast pairs' angles far from position 0),
    the rotation as ``apply_rotary`` computes it (float32 for float16 and bfloat16 input, rounded back; the scores
    of a half dtype are checked within that dtype's rounding, wherever it rounds). The
    attention scale multiplies the scores once (or q and k each by its square root), never the values: this
    function has none. Positions default to arange(Lq) and arange(Lk), both from 0, as in the second unit.

    Worked example, dh = 2 (one pair), inverse_frequencies = [0.5], q = [1, 0] at position 3, k = [1, 0] at
    position 1, attention_scale = 1: score = cos(3 * 0.5 - 1 * 0.5) / sqrt(2) = cos(1) / sqrt(2) = 0.382051;
    with attention_scale = 1.296477 (YaRN at factor 4), 0.495320.

    Paper: Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding", 2021 (the rotation); Peng
    et al., YaRN, 2023, section 3.4 (the scale on the scores).
    """
    ### BEGIN SOLUTION
    head_dim = q.shape[-1]
    if head_dim % 2 != 0 or k.shape[-1] != head_dim:
        raise ValueError(f"q and k must share an even dh, got q of shape {tuple(q.shape)} and k of shape "
                         f"{tuple(k.shape)}")
    if tuple(inverse_frequencies.shape) != (head_dim // 2,):
        raise ValueError(f"inverse_frequencies must be of shape (dh/2,) = ({head_dim // 2},), one per pair, got "
                         f"{tuple(inverse_frequencies.shape)}")
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)  # (Lq,)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)  # (Lk,)
    for x, positions, name in ((q, positions_q, "positions_q"), (k, positions_k, "positions_k")):
        if positions.dim() == 0 or positions.shape[-1] != x.shape[-2]:
            raise ValueError(f"{name} must give one position per row: {x.shape[-2]} rows, got shape "
                             f"{tuple(positions.shape)}")
    theta = inverse_frequencies.to(device=q.device, dtype=torch.float64)  # (dh/2,)

    def turned(x, positions):
        # apply_rotary on a head of dh = 2 turns its one pair at base ** 0 = 1 radian per position: given the
        # angles t * theta_i as its positions, it turns each pair i of x by its own frequency.
        angles = positions.to(device=x.device, dtype=torch.float64)[..., None, :] * theta[:, None]  # (..., dh/2, L)
        pairs = torch.stack(x.chunk(2, dim=-1), dim=-1).transpose(-3, -2)  # (B, H, dh/2, L, 2): (x[i], x[i + dh/2])
        out = apply_rotary(pairs, angles)  # (B, H, dh/2, L, 2)
        return out.transpose(-3, -2).flatten(-2)  # (B, H, L, dh), the pairs side by side: dot products unchanged

    q_turned, k_turned = turned(q, positions_q), turned(k, positions_k)  # (B, H, Lq, dh), (B, H, Lk, dh)
    # The scale folded into the queries: Lq * dh multiplications instead of a pass over Lq * Lk scores.
    return (q_turned * (attention_scale / math.sqrt(head_dim))) @ k_turned.transpose(-2, -1)  # (B, H, Lq, Lk)
    ### END SOLUTION
