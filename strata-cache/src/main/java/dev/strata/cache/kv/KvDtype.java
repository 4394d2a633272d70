package dev.strata.cache.kv;

import java.util.Locale;

/**
 * The element type of cached keys and values, with its width in bytes.
 *
 * <p>Immutable; any thread.
 */
public enum KvDtype {
    /** 32-bit IEEE float. */
    FP32(4),
    /** 16-bit IEEE half. */
    FP16(2),
    /** bfloat16. */
    BF16(2),
    /** 8-bit float, 4 exponent and 3 mantissa bits. */
    FP8_E4M3(1),
    /** 8-bit float, 5 exponent and 2 mantissa bits. */
    FP8_E5M2(1),
    /** 8-bit integer with per-block scales kept by the engine. */
    INT8(1);

    private final int bytes; // width of one element, bytes

    KvDtype(int bytes) {
        this.bytes = bytes;
    }

    /** Width of one element in bytes. */
    public int bytes() {
        return bytes;
    }

    /**
     * Parses a dtype name as written in configuration or in a Hugging Face {@code config.json}
     * ({@code torch_dtype}): {@code float32}, {@code fp32}, {@code float16}, {@code half},
     * {@code fp16}, {@code bfloat16}, {@code bf16}, {@code fp8}, {@code fp8_e4m3},
     * {@code fp8_e5m2}, {@code int8}; case-insensitive.
     *
     * @throws IllegalArgumentException naming the text and the choices
     */
    public static KvDtype parse(String text) {
        String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        if (t.startsWith("torch.")) {
            t = t.substring("torch.".length());
        }
        return switch (t) {
            case "float32", "fp32", "f32", "float" -> FP32;
            case "float16", "fp16", "f16", "half" -> FP16;
            case "bfloat16", "bf16" -> BF16;
            case "fp8", "fp8_e4m3", "float8_e4m3fn", "e4m3" -> FP8_E4M3;
            case "fp8_e5m2", "float8_e5m2", "e5m2" -> FP8_E5M2;
            case "int8" -> INT8;
            default -> throw new IllegalArgumentException("unknown KV dtype '" + text
                    + "' (choose fp32, fp16, bf16, fp8_e4m3, fp8_e5m2 or int8)");
        };
    }

    /** The lower-case name used in configuration and reports, e.g. {@code bf16}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
