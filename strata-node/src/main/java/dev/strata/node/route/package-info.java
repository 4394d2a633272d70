/**
 * Request routing across engine instances: {@link dev.strata.node.route.LeastLoadedRouter}
 * (cache-oblivious: by load alone, as a shared pool makes every block equally near) and
 * {@link dev.strata.node.route.PrefixAffinityRouter} (cache-aware baseline: longest locally cached
 * prefix under a load cap), both over {@link dev.strata.node.route.InstanceLoads}.
 */
package dev.strata.node.route;
