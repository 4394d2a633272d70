/**
 * The engine process's side: {@link dev.strata.node.client.NodeAccess} chooses from configuration
 * between the index served by {@code strata node} ({@link dev.strata.node.client.RemoteBlockIndex})
 * and the same index embedded; {@link dev.strata.node.index.PoolSharedBlockStore} moves block bytes
 * through the process's own pool mapping either way, and
 * {@link dev.strata.node.client.ResilientSharedBlockStore} takes the pool out of the KV chain while
 * the daemon is away (probing for its return) or for good once the mapping faulted.
 */
package dev.strata.node.client;
