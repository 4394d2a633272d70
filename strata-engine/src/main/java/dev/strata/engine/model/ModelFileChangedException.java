package dev.strata.engine.model;

/**
 * A memory-mapped weight file ({@link WeightLoad#MAP}) was truncated or rewritten in place after it
 * was opened: its tensors can no longer be read safely (a read beyond a truncated end faults the
 * process) nor trusted. The message names the file, what changed (size, modification time) and
 * what to do. Once raised for a {@link WeightFiles}, every later check raises it again: the model
 * stays out of service until it is opened anew.
 *
 * <p>An {@link IllegalStateException}: the request was valid, the model is not usable any more.
 */
public final class ModelFileChangedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ModelFileChangedException(String message) {
        super(message);
    }
}
