package dev.strata.engine.model;

/**
 * How a model's safetensors files become the tensors the kernels read ({@code model.load}).
 *
 * <p>{@link #COPY} is the default: the weights belong to the process, so nothing done to the files
 * afterwards (truncated, overwritten in place, replaced, removed) can change them or fault a
 * kernel. {@link #MAP} shares the page cache and starts without reading the files, at the price of
 * requiring that the files stay as they are while they are served; a change is detected between
 * scheduler steps ({@link WeightFiles#check()}) and takes the model out of service.
 */
public enum WeightLoad {
    /**
     * Each file's data area is read once, in chunks, into private off-heap memory of the process
     * ({@code dev.strata.memory.posix.UncachedRead}); the files are not used after opening.
     */
    COPY,
    /**
     * Each file is memory-mapped read-only and tensors are slices of the mapping (zero-copy). A
     * file truncated under the mapping makes a read beyond its new end fault, so the files must not
     * be truncated or rewritten in place while served; replacing a file by rename is safe (the
     * mapping keeps the old file).
     */
    MAP
}
