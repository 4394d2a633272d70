package dev.strata.memory.transfer;

import java.util.List;

/**
 * The outcome of a batch: one {@link TransferResult} per submitted transfer, in submission order.
 * A failing transfer does not fail the batch; its result has status {@link TransferStatus#FAILED}
 * and carries the exception.
 *
 * <p>Immutable; any thread.
 *
 * @param results one per transfer, in the order submitted
 * @param bytes   bytes moved by the completed transfers
 */
public record BatchResult(List<TransferResult> results, long bytes) {

    /** Transfers with the given status. */
    public int count(TransferStatus status) {
        int n = 0;
        for (TransferResult r : results) {
            if (r.status() == status) {
                n++;
            }
        }
        return n;
    }

    /** True if every transfer completed. */
    public boolean allCompleted() {
        return count(TransferStatus.COMPLETED) == results.size();
    }

    /** The first failure in submission order, or null. */
    public Throwable firstFailure() {
        for (TransferResult r : results) {
            if (r.failure() != null) {
                return r.failure();
            }
        }
        return null;
    }
}
