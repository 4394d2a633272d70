package dev.strata.memory.alloc;

/**
 * A range of bytes {@code [offset, offset + size)} in an allocator's address space, free or live
 * depending on the listing it comes from.
 *
 * <p>Immutable; any thread.
 *
 * @param offset first byte of the range
 * @param size   bytes in the range, {@code > 0}
 */
public record FreeRange(long offset, long size) {

    /** One past the last byte of the range. */
    public long end() {
        return offset + size;
    }
}
