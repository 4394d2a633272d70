package dev.strata.cli;

import dev.strata.cluster.LocalRedisCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code strata cluster up|down|status}: a local Redis Cluster for the CLUSTER tier. */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = {"Starts, stops and reports a local Redis Cluster (from redis-server on the PATH) that the CLUSTER tier",
                "(tiers.cluster) shares KV blocks through."},
        subcommands = {ClusterCommand.Up.class, ClusterCommand.Down.class, ClusterCommand.Status.class})
final class ClusterCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    /** {@code strata cluster up --dir D [--primaries 3 --replicas 1 --port-base 7000]}. */
    @Command(name = "up", mixinStandardHelpOptions = true, sortOptions = false,
            description = {"Starts a local Redis Cluster in DIR (described there on first use, started again from there later)",
                    "and waits until it is ok; prints the tiers.cluster settings that reach it."})
    static final class Up implements Callable<Integer> {
        @Option(names = "--dir", required = true, paramLabel = "DIR", description = "the cluster's directory (configuration, password, logs)")
        Path dir;
        @Option(names = "--primaries", description = "primaries, at least 3 (default: ${DEFAULT-VALUE})")
        int primaries = 3;
        @Option(names = "--replicas", description = "replicas per primary (default: ${DEFAULT-VALUE})")
        int replicas = 1;
        @Option(names = "--port-base", paramLabel = "PORT", description = "first node's port; the others follow (default: ${DEFAULT-VALUE})")
        int portBase = 7000;
        @Option(names = "--no-password", description = "start the nodes without a password (by default a random one, kept in DIR/password)")
        boolean noPassword;
        @Option(names = "--maxmemory", paramLabel = "SIZE",
                description = "data each node keeps before it evicts, e.g. 1GiB; 0: no limit (default: 256MiB)")
        String maxmemory = "256MiB";
        @Option(names = "--maxmemory-policy", paramLabel = "POLICY",
                description = "how a full node evicts: allkeys-lru or allkeys-lfu (default: ${DEFAULT-VALUE})")
        String policy = "allkeys-lru";
        @Option(names = "--tls", description = {"nodes listen only with TLS (and speak it among themselves); a CA and certificates are made",
                "with openssl in DIR/tls (a ca.crt and ca.key placed there first sign them)"})
        boolean tls;
        @Option(names = "--tls-auth-clients", description = "with TLS, clients must present a certificate signed by the CA (mutual TLS); implies --tls")
        boolean tlsAuthClients;

        @Override
        public Integer call() {
            LocalRedisCluster c = Files.exists(dir.resolve("cluster.properties")) ? LocalRedisCluster.open(dir)
                    : LocalRedisCluster.create(dir, primaries, replicas, portBase, !noPassword, dev.strata.memory.Sizes.parse(maxmemory),
                    policy, tlsAuthClients ? LocalRedisCluster.Tls.MUTUAL : tls ? LocalRedisCluster.Tls.ON : LocalRedisCluster.Tls.OFF);
            c.start(Duration.ofSeconds(60));
            System.out.println("cluster up: " + c);
            System.out.println("reach it with: " + settings(c));
            return 0;
        }

        /** The {@code --set} flags that reach {@code c}: nodes, password file and, with TLS, its CA (and client certificate). */
        static String settings(LocalRedisCluster c) {
            StringBuilder s = new StringBuilder("--set tiers.cluster.nodes=[" + String.join(",", c.nodes()) + "]");
            if (c.passwordFile() != null) {
                s.append(" --set tiers.cluster.password-file=").append(c.passwordFile());
            }
            dev.strata.cluster.LocalCertificates t = c.certificates();
            if (t != null) {
                s.append(" --set tiers.cluster.tls=true --set tiers.cluster.tls-ca-file=").append(t.caCert());
                if (c.tls() == LocalRedisCluster.Tls.MUTUAL) {
                    s.append(" --set tiers.cluster.tls-cert-file=").append(t.clientCert())
                            .append(" --set tiers.cluster.tls-key-file=").append(t.clientKey());
                }
            }
            return s.toString();
        }
    }

    /** {@code strata cluster down --dir D}. */
    @Command(name = "down", mixinStandardHelpOptions = true,
            description = "Stops the nodes of the local cluster in DIR (SIGTERM, then SIGKILL after 5 s); removes no file.")
    static final class Down implements Callable<Integer> {
        @Option(names = "--dir", required = true, paramLabel = "DIR", description = "the cluster's directory")
        Path dir;

        @Override
        public Integer call() {
            LocalRedisCluster c = LocalRedisCluster.open(dir);
            int stopped = c.stop();
            System.out.println("cluster down: stopped " + stopped + " of " + c.ports().size() + " nodes in " + dir);
            return 0;
        }
    }

    /** {@code strata cluster status --dir D}. */
    @Command(name = "status", mixinStandardHelpOptions = true,
            description = "Reports each node of the local cluster in DIR: port, pid, role and cluster state. Exit 1 unless all are ok.")
    static final class Status implements Callable<Integer> {
        @Option(names = "--dir", required = true, paramLabel = "DIR", description = "the cluster's directory")
        Path dir;

        @Override
        public Integer call() {
            LocalRedisCluster c = LocalRedisCluster.open(dir);
            boolean ok = true;
            System.out.println("port   pid      role    state");
            for (LocalRedisCluster.NodeStatus s : c.status()) {
                System.out.println(String.format(Locale.ROOT, "%-6d %-8s %-7s %s", s.port(), s.pid() == 0 ? "-" : Long.toString(s.pid()),
                        s.role(), s.clusterState()));
                ok &= "ok".equals(s.clusterState());
            }
            return ok ? 0 : 1;
        }
    }
}
