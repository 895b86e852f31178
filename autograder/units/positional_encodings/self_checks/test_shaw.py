"""Self-checks for task shaw: shaw_scores. Run: pytest -k shaw"""

import math

import torch

from checks import assert_close
from positional_encodings import shaw_scores


def _inputs(batch=2, heads=3, length_q=5, length_k=6, head_dim=4, k=2, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, length_q, head_dim, generator=generator)
    key = torch.randn(batch, heads, length_k, head_dim, generator=generator)
    rel_k = torch.randn(2 * k + 1, head_dim, generator=generator)
    return q, key, rel_k, k


def test_shaw_returns_scores_of_shape_batch_heads_lq_lk():
    got = shaw_scores(*_inputs())
    assert isinstance(got, torch.Tensor), f"expected a torch.Tensor, got {type(got).__name__}"
    assert got.shape == (2, 3, 5, 6), f"expected shape (B, H, Lq, Lk) = (2, 3, 5, 6), got {tuple(got.shape)}"


def test_shaw_with_zero_relative_keys_is_scaled_dot_product():
    q, key, rel_k, k = _inputs()
    expected = q @ key.transpose(-2, -1) / math.sqrt(q.shape[-1])
    assert_close(shaw_scores(q, key, torch.zeros_like(rel_k), k), expected, what="shaw_scores with rel_k = 0",
                 atol=1e-5, hint="the content term is scale * q @ k^T, scale = 1/sqrt(dh) by default.")


def test_shaw_query_0_key_1_matches_the_worked_example():
    q, key, rel_k, k = _inputs(k=1)
    scale = 1 / math.sqrt(q.shape[-1])
    expected = scale * (q[..., 0, :] * (key[..., 1, :] + rel_k[2])).sum(-1)  # r(0, 1) = clip(1, -1, 1) + 1 = 2
    assert_close(shaw_scores(q, key, rel_k, k)[..., 0, 1], expected, what="scores[..., 0, 1]", atol=1e-5,
                 hint="query 0 and key 1 are at distance j - i = +1, row 2 of rel_k when k = 1; "
                      "and scale multiplies both terms.")


def test_shaw_scale_multiplies_both_terms():
    q, key, rel_k, k = _inputs()
    unscaled = shaw_scores(q, key, rel_k, k, scale=1.0)
    content = q @ key.transpose(-2, -1)
    causes = [(unscaled + content, "the scale multiplies only q . k; it multiplies the relative term q . rel_k "
                                   "too."),
              (2.0 * unscaled - content, "the scale multiplies only the relative term; it multiplies q . k too.")]
    assert_close(shaw_scores(q, key, rel_k, k, scale=2.0), 2.0 * unscaled, what="shaw_scores(..., scale=2.0)",
                 atol=1e-5, causes=causes, hint="scale * (q . k + q . rel_k), both terms.")


def test_shaw_shifting_both_positions_leaves_scores_unchanged():
    # Put the same words one position later: the scores between them must not change.
    q, key, rel_k, k = _inputs(length_q=6, length_k=6)
    shifted_q = torch.cat((torch.zeros_like(q[..., :1, :]), q), dim=-2)
    shifted_k = torch.cat((torch.zeros_like(key[..., :1, :]), key), dim=-2)
    assert_close(shaw_scores(shifted_q, shifted_k, rel_k, k)[..., 1:, 1:], shaw_scores(q, key, rel_k, k),
                 what="scores after moving every word one position later", atol=1e-5,
                 hint="the relative term must depend on j - i only, never on i or j alone.")


def test_shaw_keeps_float64():
    q, key, rel_k, k = (t.double() if isinstance(t, torch.Tensor) else t for t in _inputs())
    got = shaw_scores(q, key, rel_k, k)
    assert got.dtype == torch.float64, f"float64 inputs should give float64 scores, got {got.dtype}"


def test_shaw_with_more_queries_than_keys_matches_the_formula():
    q, key, rel_k, k = (t.double() if isinstance(t, torch.Tensor) else t for t in _inputs(length_q=6, length_k=3, k=1))
    index = (torch.arange(3)[None, :] - torch.arange(6)[:, None]).clamp(-1, 1) + 1  # (Lq, Lk): j - i, clipped, + k
    expected = (q[..., :, None, :] * (key[..., None, :, :] + rel_k[index])).sum(-1) / 2  # scale 1/sqrt(4)
    assert_close(shaw_scores(q, key, rel_k, k), expected, what="shaw_scores with Lq = 6, Lk = 3, k = 1", atol=1e-9,
                 axes=("batch", "head", "query", "key"),
                 hint="scores[b, h, i, j] = scale * q_i . (k_j + rel_k[clip(j - i, -k, k) + k]), in q's dtype.")
