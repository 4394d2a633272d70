/**
 * The CLUSTER tier: KV blocks shared across machines through a Redis Cluster, so that a prefix
 * computed on one inference machine is reused on every other.
 */
package dev.strata.cluster;
