import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * Runs test classes (or {@code Class#method}) N times in one JVM and counts the rounds in which
 * anything failed, naming each failure with its round. Launched by {@code bin/repeat-tests} with
 * a module's test class path; usage: {@code RepeatTests N Selector...}. Exits 1 when any round
 * failed, 2 on bad arguments.
 */
public final class RepeatTests {
    public static void main(String[] args) {
        if (args.length < 2 || !args[0].matches("[1-9][0-9]*")) {
            System.err.println("usage: RepeatTests ROUNDS Class[#method]... (ROUNDS a positive integer, got "
                    + (args.length == 0 ? "nothing" : "'" + args[0] + "'") + ")");
            System.exit(2);
        }
        int rounds = Integer.parseInt(args[0]);
        LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request();
        for (int i = 1; i < args.length; i++) {
            request.selectors(args[i].contains("#") ? DiscoverySelectors.selectMethod(args[i]) : DiscoverySelectors.selectClass(args[i]));
        }
        LauncherDiscoveryRequest discovery = request.build();
        Launcher launcher = LauncherFactory.create();
        Map<String, List<Integer>> failures = new LinkedHashMap<>(); // test → rounds it failed in
        int failedRounds = 0;
        long tests = 0;
        for (int round = 1; round <= rounds; round++) {
            SummaryGeneratingListener listener = new SummaryGeneratingListener();
            launcher.execute(discovery, listener);
            TestExecutionSummary s = listener.getSummary();
            tests += s.getTestsFoundCount();
            if (s.getTestsFoundCount() == 0) {
                System.err.println("RepeatTests: no test found for " + List.of(args).subList(1, args.length));
                System.exit(2);
            }
            if (s.getTotalFailureCount() > 0) {
                failedRounds++;
                for (TestExecutionSummary.Failure f : s.getFailures()) {
                    String name = f.getTestIdentifier().getLegacyReportingName();
                    failures.computeIfAbsent(f.getTestIdentifier().getUniqueId(), k -> new ArrayList<>()).add(round);
                    System.out.printf("round %d: FAILED %s: %s%n", round, name, f.getException());
                    f.getException().printStackTrace(System.out);
                }
            }
            System.out.printf("round %d/%d: %d tests, %d failed (%d ms)%n", round, rounds, s.getTestsFoundCount(),
                    s.getTotalFailureCount(), s.getTimeFinished() - s.getTimeStarted());
        }
        System.out.printf("%d rounds, %d tests run, %d rounds with a failure%n", rounds, tests, failedRounds);
        failures.forEach((test, in) -> System.out.printf("  %s failed in rounds %s%n", test, in));
        System.out.flush();
        System.exit(failedRounds == 0 ? 0 : 1);
    }
}
