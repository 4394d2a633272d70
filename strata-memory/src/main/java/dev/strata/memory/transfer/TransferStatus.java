package dev.strata.memory.transfer;

/**
 * How a transfer ended.
 *
 * <ul>
 *   <li>{@link #COMPLETED}: every byte was moved.</li>
 *   <li>{@link #NOT_FOUND}: the source object was missing or not published (its read returned
 *       false); nothing usable was moved. An expected outcome, not an error.</li>
 *   <li>{@link #FAILED}: a tier threw; only seen inside a {@link BatchResult} (a single transfer's
 *       future completes exceptionally instead).</li>
 * </ul>
 */
public enum TransferStatus {
    COMPLETED,
    NOT_FOUND,
    FAILED
}
