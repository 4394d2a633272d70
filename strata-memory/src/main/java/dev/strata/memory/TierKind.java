package dev.strata.memory;

/**
 * The kinds of memory tier Strata manages, fastest first.
 *
 * <ul>
 *   <li>{@link #DEVICE}: accelerator memory; on the CPU backend a budgeted off-heap arena the engine
 *       computes from.</li>
 *   <li>{@link #PEER}: memory lent by another device or process; revocable.</li>
 *   <li>{@link #HOST}: off-heap DRAM of this process.</li>
 *   <li>{@link #POOL}: a file mapped shared by several processes (CXL/DAX device or {@code /dev/shm}).</li>
 *   <li>{@link #DISK}: files on an SSD, read and written with direct I/O.</li>
 * </ul>
 *
 * <p>Immutable; any thread.
 */
public enum TierKind {
    DEVICE,
    PEER,
    HOST,
    POOL,
    DISK
}
