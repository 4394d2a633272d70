/**
 * What lives where and why: objects ({@link dev.strata.cache.ObjectKey}, kinds, durability,
 * priority classes), the {@link dev.strata.cache.PlacementMap} of their copies, and the
 * {@link dev.strata.cache.TieredStore} that places them over a demotion chain of tiers, evicting
 * with the policies of {@link dev.strata.cache.policy} and moving bytes between tiers only through
 * {@code ObjectMover} (over the one copy path, {@link dev.strata.memory.transfer.TierCopy}).
 */
package dev.strata.cache;
