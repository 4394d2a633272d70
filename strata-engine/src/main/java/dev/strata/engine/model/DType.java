package dev.strata.engine.model;

import java.util.Locale;

/**
 * Element types of weight tensors that the engine reads: the safetensors names {@code BF16},
 * {@code F16}, {@code F32}, each with its size in bytes and its {@code torch_dtype} spelling.
 * Immutable; any thread.
 */
public enum DType {
    BF16(2, "bfloat16"),
    F16(2, "float16"),
    F32(4, "float32");

    private final int bytes; // bytes per element
    private final String torchName;

    DType(int bytes, String torchName) {
        this.bytes = bytes;
        this.torchName = torchName;
    }

    /** Bytes per element. */
    public int bytes() {
        return bytes;
    }

    /** The name {@code config.json} uses in {@code torch_dtype}. */
    public String torchName() {
        return torchName;
    }

    /** The safetensors dtype for {@code name}, or null when Strata does not support it. */
    public static DType ofSafetensors(String name) {
        for (DType d : values()) {
            if (d.name().equals(name)) {
                return d;
            }
        }
        return null;
    }

    /** The dtype for a {@code torch_dtype} value ("bfloat16", "float16", "float32"), or null. */
    public static DType ofTorch(String name) {
        String n = name.toLowerCase(Locale.ROOT).replace("torch.", "");
        for (DType d : values()) {
            if (d.torchName.equals(n)) {
                return d;
            }
        }
        return null;
    }

    /** Parses a command-line spelling: bf16, f16, f32 (any case). */
    public static DType parse(String s) {
        DType d = ofSafetensors(s.toUpperCase(Locale.ROOT));
        if (d == null) {
            d = ofTorch(s);
        }
        if (d == null) {
            throw new IllegalArgumentException("dtype '" + s + "' is not supported (bf16, f16, f32)");
        }
        return d;
    }
}
