/**
 * What lives where and why: objects, the placement map, eviction and admission policies and the
 * tiered object store.
 */
package dev.strata.cache;
