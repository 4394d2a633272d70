package dev.strata.cli;

import dev.strata.memory.log.Log;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code strata} command: parses arguments and hands each subcommand to the module that owns
 * its logic. Runs on the main thread.
 */
@Command(name = "strata", mixinStandardHelpOptions = true, version = "strata 0.1.0",
        description = "Memory management for LLM inference: KV-cache blocks and expert weights across tiers.",
        subcommands = {
                BenchCommand.class,
                InspectCommand.class,
                ModelCommand.class,
                PlanCommand.class,
                SimulateCommand.class,
                TraceCommand.class,
                NodeCommand.class,
                ClusterCommand.class,
                PeerCommand.class,
                PlanSplitCommand.class,
                ServeCommand.class,
                DemoCommand.class,
                CommandLine.HelpCommand.class})
public final class StrataCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        Log.useForJavaLogging();
        System.exit(commandLine().execute(args));
    }

    /**
     * The command line with Strata's error handling: bad input (configuration, arguments, a file that
     * is not a pool, a pool whose block index holds another model) and I/O failures end with one clear line on standard error and status 2.
     */
    static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new StrataCommand());
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof dev.strata.cache.config.ConfigException || e instanceof IllegalArgumentException
                    || e instanceof dev.strata.memory.shm.ShmFormatException || e instanceof dev.strata.memory.TierIoException
                    || e instanceof dev.strata.cache.routing.RoutingTraceException || e instanceof java.io.UncheckedIOException
                    || e instanceof dev.strata.node.index.IndexIdentityException) {
                cmd.getErr().println(Log.failure(e.getMessage()));
                return 2;
            }
            throw e;
        });
        return cli;
    }
}
