/**
 * What every shared-memory file Strata creates has in common: the header prefix
 * ({@link dev.strata.memory.shm.ShmHeader}) and its one format error
 * ({@link dev.strata.memory.shm.ShmFormatException}), the owner's liveness check
 * ({@link dev.strata.memory.shm.ProcessLiveness}), and creating, locking, reading and removing the
 * files ({@link dev.strata.memory.shm.ShmFiles}, {@link dev.strata.memory.shm.OwnedShmFile}). The
 * pool file, the block index in the pool's root region, the node's RPC region and the peer agent's
 * lending file each lay out their own fields after the prefix.
 */
package dev.strata.memory.shm;
