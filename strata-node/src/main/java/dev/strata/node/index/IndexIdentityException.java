package dev.strata.node.index;

/**
 * A process asked to attach to a pool's block index with another block-hash version or model
 * fingerprint than the index was formatted with: its block hashes would never match the stored
 * ones (a silent zero hit rate) or would name another model's blocks, so the attach is refused.
 */
public final class IndexIdentityException extends RuntimeException {
    public IndexIdentityException(String message) {
        super(message);
    }
}
