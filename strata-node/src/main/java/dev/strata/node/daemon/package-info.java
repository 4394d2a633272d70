/**
 * {@code strata node}: {@link dev.strata.node.daemon.NodeDaemon} opens a pool and the block index
 * in it and serves the index over shared-memory RPC ({@link dev.strata.node.daemon.IndexService},
 * wire format {@link dev.strata.node.daemon.IndexProtocol}).
 */
package dev.strata.node.daemon;
