/**
 * Several processes on one node or one pool: the node daemon ({@code strata node}), the pool
 * index service, RPC over shared memory and request routing across engine instances.
 *
 * <p>Dependencies point one way: {@code strata-memory} and {@code strata-cache} below, the
 * engine and the command line above. A process either attaches to a running daemon or runs the
 * same logic embedded.
 */
package dev.strata.node;
