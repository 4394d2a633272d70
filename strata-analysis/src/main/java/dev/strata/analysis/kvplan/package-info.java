/**
 * KV capacity planning ({@code strata plan}): from a model's shape and the memory of each tier per
 * rank, the KV bytes, blocks and sequences every tier holds and the per-decode-step transfer
 * budget of each link ({@link dev.strata.analysis.kvplan.KvCapacityPlanner}).
 */
package dev.strata.analysis.kvplan;
