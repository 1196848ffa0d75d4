import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.common.utils.Exit;

/**
 * Kafka's bin tools, many runs in one JVM, for kt's oracle tests: a JVM's start costs
 * more than most tool runs, and on a busy machine dozens of them did not fit a test's
 * time limit. Each line on stdin is a request, {"main": CLASS, "args": [...], "input":
 * TEXT}; each answer, one line on stdout, is {"exit": N, "stdout": ..., "stderr": ...}.
 * A tool's System.exit goes through Kafka's Exit, whose procedure here ends the run
 * with its status instead of the JVM: the first exit's status counts, and what the
 * tool prints after it (a catch block that took the unwinding for an error) is dropped. Run with Kafka's jars on the class path:
 * java -cp 'libs/*' ToolRunner.java
 */
public class ToolRunner {
    /** Thrown by Exit.exit: an Error, so that tools catching Exception do not take it. */
    static final class ToolExit extends Error {
        final int status;

        ToolExit(int status) {
            super(null, null, false, false);
            this.status = status;
        }
    }

    /** The status of the current run's first exit, or null while it has not exited. */
    static volatile Integer exitStatus;

    static void exit(int status) {
        if (exitStatus == null) {
            exitStatus = status;
            PrintStream discard = new PrintStream(OutputStream.nullOutputStream());
            System.setOut(discard);
            System.setErr(discard);
        }
        throw new ToolExit(status);
    }

    /** Run a tool's main; its exit status (the first exit's, or 1 for an exception). */
    static int runTool(String mainClass, String[] args) {
        try {
            Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (!(cause instanceof ToolExit) && exitStatus == null) {
                cause.printStackTrace(System.err);
                return 1;
            }
        } catch (ReflectiveOperationException e) {
            e.printStackTrace(System.err);
            return 1;
        }
        return exitStatus != null ? exitStatus : 0;
    }

    public static void main(String[] ignored) throws Exception {
        ObjectMapper json = new ObjectMapper();
        PrintStream answers = System.out;
        PrintStream stderr = System.err;
        InputStream stdin = System.in;
        BufferedReader requests = new BufferedReader(new InputStreamReader(stdin, StandardCharsets.UTF_8));
        Exit.setExitProcedure((status, message) -> exit(status));
        Exit.setHaltProcedure((status, message) -> exit(status));
        String line;
        while ((line = requests.readLine()) != null) {
            JsonNode request = json.readTree(line);
            String[] args = new String[request.get("args").size()];
            for (int i = 0; i < args.length; i++) {
                args[i] = request.get("args").get(i).asText();
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream capturedOut = new PrintStream(out, true, StandardCharsets.UTF_8);
            PrintStream capturedErr = new PrintStream(err, true, StandardCharsets.UTF_8);
            System.setOut(capturedOut);
            System.setErr(capturedErr);
            System.setIn(new ByteArrayInputStream(request.path("input").asText("").getBytes(StandardCharsets.UTF_8)));
            exitStatus = null;
            int[] status = {0};
            try {
                // Scala's println writes to Console.out, fixed at its first use: the Scala
                // tools (ConfigCommand, ConsoleProducer) are given this run's streams too.
                scala.Console$.MODULE$.withOut(capturedOut, (scala.Function0<Object>) () ->
                    scala.Console$.MODULE$.withErr(capturedErr, (scala.Function0<Object>) () -> {
                        status[0] = runTool(request.get("main").asText(), args);
                        return null;
                    }));
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(answers);
                System.setErr(stderr);
                System.setIn(stdin);
            }
            ObjectNode answer = json.createObjectNode();
            answer.put("exit", status[0]);
            answer.put("stdout", out.toString(StandardCharsets.UTF_8));
            answer.put("stderr", err.toString(StandardCharsets.UTF_8));
            answers.println(json.writeValueAsString(answer));
            answers.flush();
        }
    }
}
