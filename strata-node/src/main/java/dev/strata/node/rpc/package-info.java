/**
 * RPC over shared memory: a region file (under {@code /dev/shm} by default) mapped by one server
 * and many client processes, with per-client rings of request/response slots handed over by
 * tagged ready flags (release/acquire), polled by one server thread with adaptive backoff. No
 * system call and no allocation per request; dead clients are reclaimed, a dead server is a
 * status, never a hang. Layout: {@link dev.strata.node.rpc.RpcRegionLayout}; protocol:
 * {@link dev.strata.node.rpc.SlotProtocol}.
 */
package dev.strata.node.rpc;
