package dev.strata.cache.expert;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The bytes of one expert as the engine sees them: a list of named tensors (for example
 * {@code gate}, {@code up}, {@code down} and their quantisation scales), each a byte range of one
 * contiguous expert image. Every expert of every layer has the same layout, so an expert image fits
 * any slot and the engine finds tensor {@code t} of a resident expert at the same offset in every
 * slot.
 *
 * <p>Invariants: tensors are non-empty, named uniquely, and tile {@code [0, bytes())} in order
 * without gaps or overlaps (the expert image is their concatenation).
 *
 * <p>Immutable; any thread.
 *
 * @param tensors the tensors in image order
 */
public record ExpertLayout(List<Tensor> tensors) {

    /**
     * One tensor of an expert image.
     *
     * @param name   the engine's name for it, e.g. {@code down_proj.weight}
     * @param offset first byte within the expert image
     * @param bytes  length in bytes, {@code > 0}
     */
    public record Tensor(String name, long offset, long bytes) {
        public Tensor {
            Objects.requireNonNull(name, "tensor name");
            if (name.isEmpty()) {
                throw new IllegalArgumentException("a tensor name must not be empty");
            }
            if (offset < 0 || bytes <= 0) {
                throw new IllegalArgumentException("tensor '" + name + "' needs offset >= 0 and bytes > 0, got offset "
                        + offset + ", bytes " + bytes);
            }
        }
    }

    public ExpertLayout {
        tensors = List.copyOf(tensors);
        if (tensors.isEmpty()) {
            throw new IllegalArgumentException("an expert layout needs at least one tensor");
        }
        Set<String> names = new HashSet<>();
        long at = 0;
        for (Tensor t : tensors) {
            if (!names.add(t.name())) {
                throw new IllegalArgumentException("tensor name '" + t.name() + "' appears twice in the expert layout");
            }
            if (t.offset() != at) {
                throw new IllegalArgumentException("tensor '" + t.name() + "' starts at " + t.offset()
                        + " but the previous tensors end at " + at + " (tensors must tile the expert image in order)");
            }
            at = Math.addExact(at, t.bytes());
        }
    }

    /** A layout of the named tensors laid end to end in the given order. */
    public static ExpertLayout of(Object... namesAndSizes) {
        if (namesAndSizes.length == 0 || namesAndSizes.length % 2 != 0) {
            throw new IllegalArgumentException("expected name/size pairs, got " + namesAndSizes.length + " values");
        }
        List<Tensor> list = new ArrayList<>();
        long at = 0;
        for (int i = 0; i < namesAndSizes.length; i += 2) {
            String name = (String) namesAndSizes[i];
            long size = ((Number) namesAndSizes[i + 1]).longValue();
            list.add(new Tensor(name, at, size));
            at += size;
        }
        return new ExpertLayout(list);
    }

    /** A layout with one tensor named {@code weights} of {@code bytes}. */
    public static ExpertLayout single(long bytes) {
        return new ExpertLayout(List.of(new Tensor("weights", 0, bytes)));
    }

    /** Bytes of one expert image (the sum of the tensors). */
    public long bytes() {
        Tensor last = tensors.get(tensors.size() - 1);
        return last.offset() + last.bytes();
    }

    /** Number of tensors. */
    public int tensorCount() {
        return tensors.size();
    }

    /** Index of the tensor named {@code name}. */
    public int indexOf(String name) {
        for (int i = 0; i < tensors.size(); i++) {
            if (tensors.get(i).name().equals(name)) {
                return i;
            }
        }
        throw new IllegalArgumentException("no tensor named '" + name + "' in the expert layout (tensors: "
                + tensors.stream().map(Tensor::name).toList() + ")");
    }

    /** The view of tensor {@code index} inside {@code image}, a view of one whole expert image. */
    public MemorySegment slice(MemorySegment image, int index) {
        if (image.byteSize() != bytes()) {
            throw new IllegalArgumentException("an expert image is " + bytes() + " bytes, got a view of " + image.byteSize());
        }
        Tensor t = tensors.get(index);
        return image.asSlice(t.offset(), t.bytes());
    }
}
