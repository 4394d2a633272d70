package dev.strata.memory.transfer;

/**
 * The outcome of one transfer.
 *
 * <p>Immutable; any thread.
 *
 * @param status      how it ended
 * @param bytes       bytes moved (0 unless {@link TransferStatus#COMPLETED})
 * @param nanosQueued nanoseconds from submission until a link worker started it
 * @param nanosRun    nanoseconds the worker spent on it
 * @param failure     the exception when {@link TransferStatus#FAILED} (in a batch), else null
 */
public record TransferResult(TransferStatus status, long bytes, long nanosQueued, long nanosRun, Throwable failure) {

    /** True if every byte was moved. */
    public boolean completed() {
        return status == TransferStatus.COMPLETED;
    }

    /** True if the source object was missing or unpublished. */
    public boolean notFound() {
        return status == TransferStatus.NOT_FOUND;
    }
}
