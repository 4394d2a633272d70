package dev.strata.cache.kv;

import dev.strata.cache.AdmissionFilter;
import dev.strata.cache.ObjectKey;

/**
 * A DISK admission filter that learns from the KV block manager: the manager reports each use of
 * a block (a commit, a dedup onto it, a prefix hit), and the filter decides from those uses whether
 * the disk tier takes the block when the store demotes it. Install the same instance on the
 * store's disk tier ({@code TieredStore.Builder.admission}) and in the manager's configuration.
 *
 * <p>Threads: {@link #recordUse} comes from the manager's scheduler thread, {@link #admit} from
 * whichever thread runs the store's demotion; implementations are thread-safe.
 */
public interface KvDiskAdmission extends AdmissionFilter {

    /** Block {@code key} was used once more. */
    void recordUse(ObjectKey key);
}
