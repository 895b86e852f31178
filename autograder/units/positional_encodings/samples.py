"""The first unit's sample class: a dozen submissions, each the reference with one typical mistake.

Each is written out at demo time from the reference with one line changed (see autograder/ways_in/demo.py); no
second copy of any answer is kept.
"""

from autograder.core.rubric import SampleMistake

MISTAKES = (
    SampleMistake("sin_cos_swapped", "sinusoidal", "sin and cos are swapped",
                  "pairs = torch.stack((angle.sin(), angle.cos()), dim=-1)",
                  "pairs = torch.stack((angle.cos(), angle.sin()), dim=-1)"),
    SampleMistake("sin_cos_halves", "sinusoidal", "in halves",
                  "return pairs.reshape(num_positions, d_model).to(dtype)",
                  "return torch.cat((angle.sin(), angle.cos()), dim=-1).to(dtype)"),
    SampleMistake("k_over_d", "sinusoidal", "k/d_model",
                  "frequency = base ** (-two_k / d_model)",
                  "frequency = base ** (-(two_k / 2) / d_model)"),
    SampleMistake("length_check_off_by_one", "learned", "off by one",
                  "if length > self.max_len:", "if length >= self.max_len:"),
    SampleMistake("embedding_default_init", "learned", "N(0, 1)",
                  "nn.init.normal_(self.weight, mean=0.0, std=0.02)", "nn.init.normal_(self.weight)"),
    SampleMistake("i_minus_j", "relative_positions", "i - j",
                  "distance = key[None, :] - query[:, None]", "distance = query[:, None] - key[None, :]"),
    SampleMistake("missing_shift", "relative_positions", "+ k shift is missing",
                  "return distance.clamp(-k, k) + k", "return distance.clamp(-k, k)"),
    SampleMistake("scale_on_one_term", "shaw", "scale multiplies only q . k",
                  "per_distance = (q @ rel_k.to(q.dtype).transpose(0, 1)).mul_(scale)",
                  "per_distance = (q @ rel_k.to(q.dtype).transpose(0, 1))"),
    SampleMistake("buckets_not_halved", "t5_bucket", "not halved",
                  "n = num_buckets // 2 if bidirectional else num_buckets", "n = num_buckets"),
    SampleMistake("bucket_sign_flipped", "t5_bucket", "direction is flipped",
                  "offset = (relative_position > 0).long() * n", "offset = (relative_position < 0).long() * n"),
    SampleMistake("no_last_bucket_clamp", "t5_bucket", "not clamped",
                  "far = (max_exact + log_bucket).clamp(max=n - 1)", "far = max_exact + log_bucket"),
    SampleMistake("bias_layout", "t5_bias", "laid out (Lq, Lk, H)",
                  "return in_order.contiguous().unsqueeze(0)", "return in_order.permute(1, 2, 0).contiguous().unsqueeze(0)"),
    SampleMistake("scaled_bias", "biased_scores", "multiplies the bias too",
                  "scores.copy_(bias)  # broadcast into place, unscaled", "scores.copy_(bias * scale)"),
)
