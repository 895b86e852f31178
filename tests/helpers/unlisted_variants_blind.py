"""Wrong variants written blind (without reading the grader), as a held-out check of its feedback."""

BLIND_VARIANTS = {
    # ------------------------------------------------------------------ sinusoidal
    "sin_precedence_slip": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, device=device, dtype=torch.float64)
            two_k = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)
            # meant position / base ** (2k / d), but the parentheses went missing
            angle = position[:, None] / base ** two_k[None, :] / d_model
            pairs = torch.stack((angle.sin(), angle.cos()), dim=-1)
            return pairs.reshape(num_positions, d_model).to(dtype)
        """),
    "sin_stack_wrong_axis": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, device=device, dtype=torch.float64)
            two_k = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)
            frequency = base ** (-two_k / d_model)
            angle = position[:, None] * frequency[None, :]
            # stacked on a new first axis: (2, T, d/2), then flattened as if (T, d/2, 2)
            pairs = torch.stack((angle.sin(), angle.cos()), dim=0)
            return pairs.reshape(num_positions, d_model).to(dtype)
        """),
    "sin_log10_in_exp": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            position = torch.arange(num_positions, device=device, dtype=torch.float32)
            two_k = torch.arange(0, d_model, 2, device=device, dtype=torch.float32)
            # the exp-log trick, but with log10 where the natural log belongs
            frequency = torch.exp(two_k * (-math.log10(base) / d_model))
            angle = position[:, None] * frequency[None, :]
            out = torch.zeros(num_positions, d_model, device=device, dtype=torch.float32)
            out[:, 0::2] = torch.sin(angle)
            out[:, 1::2] = torch.cos(angle)
            return out.to(dtype)
        """),
    "sin_half_precision_angles": ("sinusoidal", """
        def sinusoidal_table(num_positions, d_model, base=10000.0, *, device=None, dtype=torch.float32):
            _check(num_positions, d_model)
            # "save memory": everything in float16, which cannot even count positions past 2048 exactly
            position = torch.arange(num_positions, device=device).to(torch.float16)
            two_k = torch.arange(0, d_model, 2, device=device).to(torch.float16)
            frequency = (base ** (-two_k.float() / d_model)).to(torch.float16)
            angle = position[:, None] * frequency[None, :]
            pairs = torch.stack((angle.float().sin(), angle.float().cos()), dim=-1)
            return pairs.reshape(num_positions, d_model).to(dtype)
        """),
    # ------------------------------------------------------------------ learned
    "learned_std_squared": ("learned", """
        class LearnedPositionalEmbedding(_ReferenceLearned):
            def __init__(self, max_len, d_model, mode="add"):
                nn.Module.__init__(self)
                if mode not in ("add", "concat"):
                    raise ValueError(f'mode must be "add" or "concat", got mode={mode!r}')
                self.max_len = max_len
                self.d_model = d_model
                self.mode = mode
                self.weight = nn.Parameter(torch.empty(max_len, d_model))
                # the docstring says N(0, 0.02**2): the variance was passed as std
                nn.init.normal_(self.weight, mean=0.0, std=0.02 ** 2)
        """),
    "learned_detached_rows": ("learned", """
        class LearnedPositionalEmbedding(_ReferenceLearned):
            def forward(self, x):
                batch, length = x.shape[0], x.shape[1]
                if length > self.max_len:
                    raise ValueError(f"sequence length L={length} exceeds max_len={self.max_len}")
                # .detach() to "avoid autograd warnings": the table never learns
                rows = self.weight[:length].detach()
                if self.mode == "add":
                    return x + rows
                rows = rows.unsqueeze(0).expand(batch, length, self.d_model)
                return torch.cat((x, rows), dim=-1)
        """),
    "learned_in_place_add": ("learned", """
        class LearnedPositionalEmbedding(_ReferenceLearned):
            def forward(self, x):
                batch, length = x.shape[0], x.shape[1]
                if length > self.max_len:
                    raise ValueError(f"sequence length L={length} exceeds max_len={self.max_len}")
                rows = self.weight[:length]
                if self.mode == "add":
                    x += rows  # in place: overwrites the caller's word vectors
                    return x
                rows = rows.unsqueeze(0).expand(batch, length, self.d_model)
                return torch.cat((x, rows), dim=-1)
        """),
    # ------------------------------------------------------------------ relative_positions
    "relpos_clamp_upper_2k_plus_1": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            if max_relative_position < 0:
                raise ValueError(f"max_relative_position must be 0 or more, got {max_relative_position}")
            k = max_relative_position
            query = torch.arange(length_q, device=device)
            key = torch.arange(length_k, device=device)
            # shift first, then clip to "the 2k + 1 rows": upper bound one too high
            return (key[None, :] - query[:, None] + k).clamp(0, 2 * k + 1)
        """),
    "relpos_keys_use_length_q": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            if max_relative_position < 0:
                raise ValueError(f"max_relative_position must be 0 or more, got {max_relative_position}")
            k = max_relative_position
            positions = torch.arange(length_q, device=device)  # assumed Lq == Lk (self-attention)
            distance = positions[None, :] - positions[:, None]
            return distance.clamp(-k, k) + k
        """),
    "relpos_int32_result": ("relative_positions", """
        def clipped_relative_positions(length_q, length_k, max_relative_position, *, device=None):
            if max_relative_position < 0:
                raise ValueError(f"max_relative_position must be 0 or more, got {max_relative_position}")
            k = max_relative_position
            query = torch.arange(length_q, device=device, dtype=torch.int32)
            key = torch.arange(length_k, device=device, dtype=torch.int32)
            return (key[None, :] - query[:, None]).clamp(-k, k) + k  # int32, not int64
        """),
    # ------------------------------------------------------------------ shaw
    "shaw_default_scale_sqrt_lk": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            if scale is None:
                scale = 1.0 / math.sqrt(k.shape[-2])  # the key length, not the head size
            return _reference_shaw_scores(q, k, rel_k, max_relative_position, scale=scale)
        """),
    "shaw_relative_term_from_keys": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            if scale is None:
                scale = 1.0 / math.sqrt(q.shape[-1])
            length_q, length_k = q.shape[-2], k.shape[-2]
            # "relative KEY" read as: the keys meet the relative vectors
            per_distance = k @ rel_k.to(k.dtype).transpose(0, 1)  # (B, H, Lk, 2k+1)
            index = clipped_relative_positions(length_q, length_k, max_relative_position, device=q.device)
            index = index.expand(*per_distance.shape[:-2], length_q, length_k)
            return scale * (q @ k.transpose(-2, -1) + per_distance.gather(-1, index))
        """),
    "shaw_scales_q_in_place": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            if scale is None:
                scale = 1.0 / math.sqrt(q.shape[-1])
            q *= scale  # scale once up front, both terms get it... and so does the caller's q
            length_q, length_k = q.shape[-2], k.shape[-2]
            per_distance = q @ rel_k.to(q.dtype).transpose(0, 1)
            index = clipped_relative_positions(length_q, length_k, max_relative_position, device=q.device)
            index = index.expand(*per_distance.shape[:-1], length_k)
            return per_distance.gather(-1, index) + q @ k.transpose(-2, -1)
        """),
    "shaw_causal_mask_added": ("shaw", """
        def shaw_scores(q, k, rel_k, max_relative_position, *, scale=None):
            scores = _reference_shaw_scores(q, k, rel_k, max_relative_position, scale=scale)
            length_q, length_k = q.shape[-2], k.shape[-2]
            # a causal mask nobody asked for
            future = torch.ones(length_q, length_k, dtype=torch.bool, device=q.device).triu(1)
            return scores.masked_fill(future, float("-inf"))
        """),
    # ------------------------------------------------------------------ t5_bucket
    "t5_bucket_round_instead_of_trunc": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = n // 2
            if bidirectional:
                offset = (relative_position > 0).long() * n
                distance = relative_position.abs()
            else:
                offset = torch.zeros_like(relative_position, dtype=torch.long)
                distance = (-relative_position).clamp(min=0)
            is_exact = distance < max_exact
            scaled = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
            far = (max_exact + torch.round(scaled).long()).clamp(max=n - 1)  # rounds to nearest
            return offset + torch.where(is_exact, distance.long(), far)
        """),
    "t5_bucket_causal_abs_distance": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = n // 2
            if bidirectional:
                offset = (relative_position > 0).long() * n
            else:
                offset = torch.zeros_like(relative_position, dtype=torch.long)
            distance = relative_position.abs()  # used in both modes: future keys are not sent to 0
            is_exact = distance < max_exact
            log_bucket = (
                torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
            ).long()
            far = (max_exact + log_bucket).clamp(max=n - 1)
            return offset + torch.where(is_exact, distance.long(), far)
        """),
    "t5_bucket_offset_includes_zero": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = n // 2
            if bidirectional:
                offset = (relative_position >= 0).long() * n  # distance 0 lands in the upper half
                distance = relative_position.abs()
            else:
                offset = torch.zeros_like(relative_position, dtype=torch.long)
                distance = (-relative_position).clamp(min=0)
            is_exact = distance < max_exact
            log_bucket = (
                torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact) * (n - max_exact)
            ).long()
            far = (max_exact + log_bucket).clamp(max=n - 1)
            return offset + torch.where(is_exact, distance.long(), far)
        """),
    "t5_bucket_log_of_max_distance_only": ("t5_bucket", """
        def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
            _check_buckets(bidirectional, num_buckets, max_distance)
            n = num_buckets // 2 if bidirectional else num_buckets
            max_exact = n // 2
            if bidirectional:
                offset = (relative_position > 0).long() * n
                distance = relative_position.abs()
            else:
                offset = torch.zeros_like(relative_position, dtype=torch.long)
                distance = (-relative_position).clamp(min=0)
            is_exact = distance < max_exact
            # denominator log(max_distance) instead of log(max_distance / max_exact)
            log_bucket = (
                torch.log(distance.float() / max_exact) / math.log(max_distance) * (n - max_exact)
            ).long()
            far = (max_exact + log_bucket).clamp(max=n - 1)
            return offset + torch.where(is_exact, distance.long(), far)
        """),
    # ------------------------------------------------------------------ t5_bias
    "t5_bias_permute_reversed": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            device = bias_table.device
            query = torch.arange(length_q, device=device)
            key = torch.arange(length_k, device=device)
            relative = key[None, :] - query[:, None]
            buckets = t5_relative_position_bucket(
                relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
            )
            values = bias_table[buckets]  # (Lq, Lk, H)
            return values.permute(2, 1, 0).unsqueeze(0)  # meant (2, 0, 1): gives (1, H, Lk, Lq)
        """),
    "t5_bias_forced_float32": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            bias = _reference_t5_bias(
                length_q, length_k, bias_table,
                bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance,
            )
            return bias.float()  # "scores are float anyway": drops the table's dtype
        """),
    "t5_bias_squeeze_drops_axes": ("t5_bias", """
        def t5_bias(length_q, length_k, bias_table, *, bidirectional=True, num_buckets=32, max_distance=128):
            device = bias_table.device
            query = torch.arange(length_q, device=device)
            key = torch.arange(length_k, device=device)
            buckets = t5_relative_position_bucket(
                key[None, :] - query[:, None],
                bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance,
            )
            # tidy up with squeeze() before adding the batch axis: loses any size-1 axis (H, Lq or Lk)
            return bias_table[buckets].permute(2, 0, 1).squeeze().unsqueeze(0)
        """),
    # ------------------------------------------------------------------ biased_scores
    "biased_returns_softmax": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            if scale is None:
                scale = 1.0 / math.sqrt(q.shape[-1])
            scores = scale * (q @ k.transpose(-2, -1)) + bias
            return torch.softmax(scores, dim=-1)  # one step too far: weights, not scores
        """),
    "biased_scale_uses_model_width": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            if scale is None:
                d_model = q.shape[1] * q.shape[-1]  # H * dh, the paper's d_model
                scale = 1.0 / math.sqrt(d_model)
            return scale * (q @ k.transpose(-2, -1)) + bias
        """),
    "biased_einsum_output_transposed": ("biased_scores", """
        def biased_scores(q, k, bias, *, scale=None):
            if scale is None:
                scale = 1.0 / math.sqrt(q.shape[-1])
            scores = torch.einsum("bhid,bhjd->bhji", q, k)  # output indices swapped
            return scale * scores + bias
        """),
}
