package dev.strata.engine.model;

/**
 * Whether and how a family normalises queries and keys before RoPE. Qwen3 and Qwen3-MoE apply
 * an RMSNorm of width {@code head_dim} to each head ({@code q_norm.weight} shape
 * {@code [head_dim]}); OLMoE applies one RMSNorm over all heads together ({@code q_norm.weight}
 * shape {@code [heads × head_dim]}, {@code k_norm.weight} {@code [kv_heads × head_dim]}).
 */
public enum QkNorm {
    NONE,
    PER_HEAD,
    FULL_WIDTH
}
