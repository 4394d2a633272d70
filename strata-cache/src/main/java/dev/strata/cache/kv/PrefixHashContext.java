package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;

/**
 * Everything besides the tokens that decides whether two KV blocks hold the same bytes: the
 * model, the KV element type, the block size, the adapter and an optional tenant salt. It seeds
 * the hash chain, so blocks of different contexts never share a key.
 *
 * <p>Immutable; any thread.
 *
 * @param modelFingerprint the model's identity (see {@link ModelFingerprint})
 * @param dtype            the KV element type
 * @param blockTokens      tokens per block
 * @param adapterId        the adapter (for example a LoRA) the KV was computed with, "" for none
 * @param tenantSalt       a secret or tenant name that keeps tenants' prefixes apart, "" for none
 */
public record PrefixHashContext(ObjectKey modelFingerprint, KvDtype dtype, int blockTokens, String adapterId,
        String tenantSalt) {

    /**
     * @throws IllegalArgumentException naming the field when one is missing or out of range
     */
    public PrefixHashContext {
        if (modelFingerprint == null) {
            throw new IllegalArgumentException("model fingerprint must be given");
        }
        if (dtype == null) {
            throw new IllegalArgumentException("KV dtype must be given");
        }
        if (blockTokens <= 0) {
            throw new IllegalArgumentException("block tokens must be positive, got " + blockTokens);
        }
        adapterId = adapterId == null ? "" : adapterId;
        tenantSalt = tenantSalt == null ? "" : tenantSalt;
    }

    /** A context without adapter or salt. */
    public static PrefixHashContext of(ObjectKey modelFingerprint, KvGeometry geometry) {
        return new PrefixHashContext(modelFingerprint, geometry.dtype(), geometry.blockTokens(), "", "");
    }

    /** The same context for another tenant. */
    public PrefixHashContext withTenantSalt(String salt) {
        return new PrefixHashContext(modelFingerprint, dtype, blockTokens, adapterId, salt);
    }

    /** The same context for another adapter. */
    public PrefixHashContext withAdapter(String adapter) {
        return new PrefixHashContext(modelFingerprint, dtype, blockTokens, adapter, tenantSalt);
    }
}
