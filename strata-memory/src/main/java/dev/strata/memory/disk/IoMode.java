package dev.strata.memory.disk;

/**
 * How a DISK tier moves bytes to and from its files.
 *
 * <ul>
 *   <li>{@link #DIRECT}: {@code O_DIRECT}, bypassing the page cache; every transfer is aligned
 *       to the file store's block size.</li>
 *   <li>{@link #BUFFERED}: ordinary I/O through the page cache, used where direct I/O is refused
 *       or meaningless (memory-backed file systems) or switched off by configuration.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum IoMode {
    DIRECT,
    BUFFERED
}
