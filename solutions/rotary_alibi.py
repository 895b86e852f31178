"""Position at the score, with nothing to learn: rotary embeddings (RoPE) and ALiBi.

The first unit put position into attention by adding something: a vector at
the input, a vector at the key, a number at the score. The two methods of this
unit, used by most large language models today, add no parameters at all:

* RoPE (Su et al. 2021; GPT-NeoX, LLaMA) turns each pair of coordinates of a
  query or key by an angle proportional to its position. A turn by angle
  ``m * theta`` of the query and by ``n * theta`` of the key leaves their dot
  product depending on the difference ``m - n`` alone: relative position,
  obtained from absolute positions, at the cost of O(L * dh) per sequence.
* ALiBi (Press et al. 2022; BLOOM, MPT) adds a linear penalty to the score,
  ``-slope_h * distance``, with one fixed slope per head, so that each head
  looks at its own distance scale.
* Position interpolation (Chen et al. 2023) lets a RoPE model read a longer
  context than it was trained on, by squeezing the new positions into the old
  range.

Six tasks, each named after what it computes; the same names are the
``pytest -k`` words, the grader's headings and the nbgrader grade ids:

    rotary_angles       rotary_angles
    apply_rotary        apply_rotary
    rope_scores         rope_scores
    alibi_slopes        alibi_slopes
    alibi_bias          alibi_bias
    scaled_positions    scaled_positions

Conventions used everywhere: positions are counted from 0; ``B`` is the batch
size, ``H`` the number of heads, ``L`` (``Lq``/``Lk``) the sequence (query/key)
length and ``dh`` the size of one head. No Python loop over positions: every
function is a few tensor operations, and works on the device of its inputs.
"""

import math

import torch


def rotary_angles(positions, head_dim, base=10000.0, *, dtype=torch.float32):
    """The cosines and sines of the rotary angles: one angle per position and pair.

        angle[..., i] = t * theta_i        with  theta_i = base ** (-2i / head_dim),  i = 0 .. head_dim/2 - 1

    where ``t`` is each entry of ``positions``. Pair ``i`` turns at its own
    angular speed ``theta_i``: pair 0 by one radian per position, the last pair
    almost not at all; the same speeds as the sinusoidal table of the first unit.

    Args:
        positions: (...) tensor of any shape (a scalar, (L,), (B, L), ...):
            integer positions, or float ones such as the output of
            ``scaled_positions`` (a position need not be a whole number).
        head_dim: dh, the size of one head; must be even and positive.
        base: the wavelength scale (10000 in the paper and in LLaMA 1 and 2).
        dtype: the dtype of ``cos`` and ``sin`` (default float32).

    Returns:
        cos, sin: two tensors, each of shape ``positions.shape + (dh // 2,)``,
        of ``dtype`` on ``positions``' device: ``cos[..., i] = cos(angle[..., i])``.

    Raises:
        ValueError: if ``head_dim`` is odd, zero or negative.

    Convention the grader expects: one angle per pair, so the last axis has
    dh/2 entries, not dh (Hugging Face's ``LlamaRotaryEmbedding`` repeats them
    to dh; ``apply_rotary`` decides how the pairs are laid out); the angles
    are computed in float64 and rounded to ``dtype`` once, at the end.

    Worked example, t = 3 with dh = 4 and base = 10000:
        theta = [10000 ** (-0/4), 10000 ** (-2/4)] = [1, 0.01]
        angle = [3, 0.03]
        cos   = [-0.9900, 0.9996]      sin = [0.1411, 0.0300]

    Paper: Su et al., "RoFormer: Enhanced Transformer with Rotary Position
    Embedding", 2021, section 3.2.2 (the general form), where i counts from 1:
    theta_i = 10000 ** (-2 (i - 1) / d).
    """
    ### BEGIN SOLUTION
    if head_dim <= 0 or head_dim % 2 != 0:
        raise ValueError(
            f"head_dim must be a positive even number (RoPE turns coordinates in pairs), got head_dim={head_dim}"
        )
    # In float64 and a single rounding at the end: t * theta stays accurate at large positions.
    two_i = torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float64)  # (dh/2,)
    theta = base ** (-two_i / head_dim)  # (dh/2,)
    angle = positions.to(torch.float64)[..., None] * theta  # (..., dh/2)
    return angle.cos().to(dtype), angle.sin().to(dtype)  # (..., dh/2) each
    ### END SOLUTION


def apply_rotary(x, positions, base=10000.0, *, interleaved=True):
    """Rotary position embedding: turn each pair of coordinates of row ``l`` by its position's angles.

    With ``(a, b)`` a pair of ``x[..., l, :]`` and ``angle = t_l * theta_i``
    (``t_l = positions[l]``, ``theta_i`` as in ``rotary_angles``):

        a' = a * cos(angle) - b * sin(angle)
        b' = a * sin(angle) + b * cos(angle)

    which is the 2-D rotation of ``(a, b)`` by ``angle``, counter-clockwise.

    Args:
        x: (..., L, dh) float: queries or keys with any leading axes, typically
            (B, H, L, dh).
        positions: (L,) integer (or float) positions of the L rows of ``x``; or
            any shape that broadcasts to (..., L), such as (B, 1, L) for
            positions that differ between the sequences of a batch. They need
            not start at 0: with a KV cache, the new rows are at positions
            ``past .. past + L - 1``.
        base: the wavelength scale, as in ``rotary_angles``.
        interleaved: which coordinates form pair ``i``.
            True: ``(x[2i], x[2i + 1])``, neighbours (RoFormer, GPT-J);
            False: ``(x[i], x[i + dh/2])``, the first half against the second
            half ("rotate half": GPT-NeoX, LLaMA, Hugging Face).

    Returns:
        out: a new tensor, the shape, dtype and device of ``x``; ``x`` itself
        is left unchanged.

    Raises:
        ValueError: if ``dh`` is odd, or ``positions`` does not end in L entries.

    Convention the grader expects: the rotation is counter-clockwise (``-sin``
    on the first member of a pair, ``+sin`` on the second); pair ``i`` uses
    ``theta_i`` in both layouts. The arithmetic is float32 for float16 and
    bfloat16 input (cast back at the end), float64 for float64 input.

    Worked example, x = [1, 2, 3, 4] at position t = 1 (dh = 4, angles [1, 0.01]):
        interleaved=True:  pairs (1, 2), (3, 4)  ->  [-1.1426, 1.9221, 2.9599, 4.0298]
        interleaved=False: pairs (1, 3), (2, 4)  ->  [-1.9841, 1.9599, 2.4624, 4.0198]
    At position 0 every angle is 0, and ``out`` equals ``x``.

    Paper: Su et al., RoFormer, 2021, section 3.4.2 (the computationally
    efficient realization of the rotation, without the rotation matrix).
    """
    ### BEGIN SOLUTION
    length = x.shape[-2]
    if positions.dim() == 0 or positions.shape[-1] != length:
        raise ValueError(
            f"positions must give one position per row of x: x has L={length} rows (x.shape[-2]), "
            f"positions has shape {tuple(positions.shape)}"
        )
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32  # float16/bfloat16 in float32
    cos, sin = rotary_angles(positions, x.shape[-1], base, dtype=compute)  # (..., L, dh/2) each
    wide = x.to(compute)  # x itself for float32/float64; nothing below writes into it
    if interleaved:
        a, b = wide[..., 0::2], wide[..., 1::2]  # (..., L, dh/2) each: even and odd coordinates
        turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)  # (..., L, dh/2, 2)
        out = turned.flatten(-2)  # (..., L, dh): a', b', a', b', ...
    else:
        a, b = wide.chunk(2, dim=-1)  # (..., L, dh/2) each: first and second half
        out = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)  # (..., L, dh)
    return out.to(x.dtype)
    ### END SOLUTION


def rope_scores(q, k, *, base=10000.0, scale=None, positions_q=None, positions_k=None, interleaved=True):
    """Attention scores of rotated queries against rotated keys.

        scores[b, h, i, j] = scale * R(m_i) q[b, h, i] . R(n_j) k[b, h, j]
                           = scale * q[b, h, i] . R(n_j - m_i) k[b, h, j]

    where ``R(t)`` is ``apply_rotary`` at position ``t``, ``m_i`` the position
    of query ``i`` and ``n_j`` that of key ``j``. Rotations compose by adding
    angles, and turning both vectors by the same angle leaves their dot
    product unchanged, hence the second line: the score depends on the
    positions only through their difference. Each of q and k is rotated once,
    O((Lq + Lk) * dh), then a single matrix product gives every score.

    Args:
        q: (B, H, Lq, dh) queries.
        k: (B, H, Lk, dh) keys.
        base: the wavelength scale, as in ``rotary_angles``.
        scale: multiplies every score; default ``1 / sqrt(dh)``.
        positions_q: (Lq,) positions of the queries (or a shape that
            broadcasts to (B, H, Lq)); default ``arange(Lq)``.
        positions_k: (Lk,) positions of the keys (or a shape that broadcasts
            to (B, H, Lk)); default ``arange(Lk)``.
        interleaved: the pair layout, as in ``apply_rotary``; q and k use the same.

    Returns:
        scores: (B, H, Lq, Lk), the dtype and device of ``q``.

    Convention the grader expects: both default position sets count from 0,
    whatever Lq and Lk are, as in the first unit. When the queries are the
    last Lq of Lk positions (decoding with a KV cache), pass them yourself:
    ``positions_q=torch.arange(Lk - Lq, Lk)``. ``scale`` multiplies the whole
    score; the rotation is applied to q and k, never to the scores.

    Worked example, dh = 2 (a single pair turning at theta_0 = 1 radian per
    position), q = [1, 0] at position 3, k = [1, 0] at position 1, scale = 1:
        score = cos(3) cos(1) + sin(3) sin(1) = cos(3 - 1) = -0.4161
    and moving both to positions 13 and 11 gives -0.4161 again.

    Paper: Su et al., RoFormer, 2021, section 3.2.2: the score of query m and
    key n goes through R(n - m) alone.
    """
    ### BEGIN SOLUTION
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if positions_q is None:
        positions_q = torch.arange(q.shape[-2], device=q.device)  # (Lq,)
    if positions_k is None:
        positions_k = torch.arange(k.shape[-2], device=k.device)  # (Lk,)
    q_turned = apply_rotary(q, positions_q, base, interleaved=interleaved)  # (B, H, Lq, dh)
    k_turned = apply_rotary(k, positions_k, base, interleaved=interleaved)  # (B, H, Lk, dh)
    # The scale folded into the queries: Lq * dh multiplications instead of a pass over Lq * Lk scores.
    return (q_turned * scale) @ k_turned.transpose(-2, -1)  # (B, H, Lq, Lk)
    ### END SOLUTION


def alibi_slopes(num_heads, *, device=None):
    """ALiBi's fixed slope for each head: a geometric sequence.

    For ``n = num_heads`` a power of two:

        slope_h = 2 ** (-8 (h + 1) / n)        h = 0 .. n-1

    that is, the sequence starts at ``2 ** (-8 / n)`` and each slope is the one
    before times that same ratio; the last is 2 ** -8. Otherwise, with ``c``
    the largest power of two below n: the c slopes for c heads, then the
    first ``n - c`` of every other slope (``[0::2]``: the 1st, 3rd, 5th, ...)
    of the 2c slopes for 2c heads.

    Args:
        num_heads: n, the number of heads; at least 1.
        device: where to build the slopes (default: the CPU).

    Returns:
        slopes: (n,) float32 on ``device``, each in (0, 1).

    Raises:
        ValueError: if ``num_heads`` is 0 or negative.

    Convention the grader expects: the exact float32 numbers of Hugging Face's
    BLOOM (``build_alibi_tensor``): the ratio ``2 ** (-8 / c)`` is rounded to
    float32 once, and then raised to the integer powers 1 .. c in float32 by
    ``torch.pow``; the extra slopes are the odd powers 1, 3, 5, ... of the
    float32 ratio ``2 ** (-4 / c)`` of 2c heads. The ratio's rounding error is
    multiplied by the power, so these are not ``2 ** (-8 (h+1) / n)`` rounded
    to float32: from n = 11 on some heads differ in the last bits, by up to
    6 ulps (5e-7 relatively) for n <= 64.

    Worked example, n = 6, so c = 4:
        4 heads: 2^-2, 2^-4, 2^-6, 2^-8             8 heads: 2^-1, 2^-2, ..., 2^-8
        slopes = [0.25, 0.0625, 0.015625, 0.00390625,  0.5, 0.125]
                  (the 4-head slopes)                  (2^-1 and 2^-3 of the 8)

    Paper: Press, Smith and Lewis, "Train Short, Test Long: Attention with
    Linear Biases Enables Input Length Extrapolation", 2022, section 3 (the
    slopes for a power of two); the rule for other numbers of heads is that
    of the authors' released code, which BLOOM follows.
    """
    ### BEGIN SOLUTION
    if num_heads <= 0:
        raise ValueError(f"num_heads must be 1 or more (one slope per head), got num_heads={num_heads}")
    closest = 1 << (num_heads.bit_length() - 1)  # the largest power of two <= num_heads
    # BLOOM's float32 arithmetic, call for call: torch.pow's last bit depends on how it is called.
    ratio = torch.full((), 2.0 ** (-8.0 / closest), device=device, dtype=torch.float32)  # ()
    powers = torch.arange(1, closest + 1, device=device, dtype=torch.int32)  # (c,): 1 .. c
    slopes = torch.pow(ratio, powers)  # (c,)
    if closest == num_heads:
        return slopes
    finer = torch.full((), 2.0 ** (-4.0 / closest), device=device, dtype=torch.float32)  # (): the ratio for 2c heads
    odd = torch.arange(1, 2 * (num_heads - closest), 2, device=device, dtype=torch.int32)  # (n - c,): 1, 3, 5, ...
    return torch.cat((slopes, torch.pow(finer, odd)))  # (n,)
    ### END SOLUTION


def alibi_bias(length_q, length_k, slopes, *, causal=True):
    """ALiBi's bias: a penalty growing linearly with how far the key lies from the query.

        causal=True:   bias[0, h, i, j] = -slope_h * (i - j)   for j <= i,  and 0 for j > i
        causal=False:  bias[0, h, i, j] = -slope_h * |i - j|

    Query ``i`` and key ``j`` are both counted from 0. The key at the query's
    own position costs nothing, one position back costs ``slope_h``, two cost
    twice that; a head with a large slope looks only nearby, one with a small
    slope far back.

    Args:
        length_q: Lq, the number of queries.
        length_k: Lk, the number of keys (it may differ from Lq).
        slopes: (H,) one slope per head, such as ``alibi_slopes(H)``.
        causal: True for a decoder, whose attention mask removes the keys
            after the query; False for an encoder, where both directions cost.

    Returns:
        bias: (1, H, Lq, Lk) with ``slopes``' dtype and device, ready to be
        added to (B, H, Lq, Lk) scores. Every entry is 0 or negative.

    Raises:
        ValueError: if ``slopes`` is not one-dimensional.

    Convention the grader expects: heads before positions, (1, H, Lq, Lk);
    for causal=True the entries of future keys (j > i) are 0, not -inf: the
    bias carries no mask, the caller's causal mask removes those keys. When
    the queries are the last Lq of Lk positions (a KV cache), take the last
    rows of the square bias: ``alibi_bias(Lk, Lk, slopes)[:, :, -Lq:]``.

    BLOOM (Hugging Face) adds ``slope_h * j`` instead, the key's own position:
    it differs from ``-slope_h * (i - j)`` by ``slope_h * i``, the same number
    for every key of row ``i``, so under a causal mask the softmax (and the
    attention) is the same. The grader asks for the ``-slope_h * (i - j)``
    form of the paper, whose diagonal is 0.

    Worked example, Lq = Lk = 3, one head with slope 0.5:
        causal=True:  [[ 0.0,  0.0,  0.0],     causal=False: [[ 0.0, -0.5, -1.0],
                       [-0.5,  0.0,  0.0],                    [-0.5,  0.0, -0.5],
                       [-1.0, -0.5,  0.0]]                    [-1.0, -0.5,  0.0]]

    Paper: Press, Smith and Lewis, 2022, section 3.
    """
    ### BEGIN SOLUTION
    if slopes.dim() != 1:
        raise ValueError(f"slopes must be one-dimensional, one slope per head (H,), got shape {tuple(slopes.shape)}")
    # The bias depends on i - j alone: Lq + Lk - 1 distinct distances, each computed once per head.
    # Entry t of `line` is distance i - j = (Lq - 1) - t; row a of the strided view below starts at t = a
    # and steps one distance per key, so it holds query Lq - 1 - a: the bias with its rows in reverse order.
    distance = (length_q - 1) - torch.arange(max(length_q + length_k - 1, 0), device=slopes.device)  # (Lq + Lk - 1,)
    distance = distance.clamp(min=0) if causal else distance.abs()  # how far back the key lies; 0 after i
    line = slopes[:, None] * (-distance).to(slopes.dtype)  # (H, Lq + Lk - 1); negated as integers: no -0.0
    backwards = line.as_strided((line.shape[0], length_q, length_k), (line.shape[1], 1, 1))  # (H, Lq, Lk), no copy
    # One pass puts the rows in query order, in fresh memory (flip keeps rows whole only when Lq >= Lk).
    reverse = torch.arange(length_q - 1, -1, -1, device=slopes.device)  # (Lq,): Lq - 1 .. 0
    rows = backwards.flip(1) if length_q >= length_k else backwards[:, reverse]  # (H, Lq, Lk)
    return rows.contiguous().unsqueeze(0)  # (1, H, Lq, Lk)
    ### END SOLUTION


def scaled_positions(positions, *, factor):
    """Position interpolation: squeeze the positions of a longer context into the trained range.

        out = positions / factor

    A RoPE model trained on L positions has seen only the angles of
    positions 0 .. L-1; at position 2L its angles are new to it, and its
    scores go wrong. With ``factor = L_new / L``, the positions 0 .. L_new - 1
    become 0 .. L - 1/factor: inside the range it knows, at a finer spacing.
    Feeding ``out`` to ``rotary_angles`` divides every angle by ``factor``.

    Args:
        positions: (...) integer or float tensor of positions.
        factor: a positive number; usually the context's growth, ``L_new / L >= 1``.

    Returns:
        out: float tensor of the shape and device of ``positions``: float64 if
        ``positions`` is float64, float32 otherwise.

    Raises:
        ValueError: if ``factor`` is zero, negative, infinite or NaN.

    Convention the grader expects: a true division (fractional positions are
    the point), computed in float64 and rounded once. A float32 position near
    10000 is only good to about 0.001, which turns the fastest pair by as
    much; pass float64 positions for long contexts.

    Worked example: a model trained on 2048 positions, read at 8192 with
    factor = 4: positions [0, 1, 2, 8191] become [0.0, 0.25, 0.5, 2047.75].

    Paper: Chen, Wong, Chen and Tian, "Extending Context Window of Large
    Language Models via Positional Interpolation", 2023: position m of the
    longer context is read as m * L / L_new.
    """
    ### BEGIN SOLUTION
    if not 0 < factor < math.inf:  # False for NaN too
        raise ValueError(f"factor must be a positive, finite number, got factor={factor}")
    dtype = torch.float64 if positions.dtype == torch.float64 else torch.float32
    return (positions.to(torch.float64) / factor).to(dtype)  # (...)
    ### END SOLUTION
