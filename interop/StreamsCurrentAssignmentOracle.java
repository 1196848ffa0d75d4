import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.coordinator.group.streams.CurrentAssignmentBuilder;
import org.apache.kafka.coordinator.group.streams.MemberState;
import org.apache.kafka.coordinator.group.streams.StreamsGroupMember;
import org.apache.kafka.coordinator.group.streams.TasksTuple;
import org.apache.kafka.coordinator.group.streams.TasksTupleWithEpochs;

/**
 * Kafka 4.4's own streams CurrentAssignmentBuilder on the members kt's tests describe,
 * one per line of standard input, for the oracle of kt's port
 * (kt/broker/group/streams_current_assignment.py). Fields joined by ";":
 *
 *   process; state (1 2 3 127); epoch; previous epoch; assigned active ("s.p@e.p@e" joined
 *   by "/"), standby, warm-up ("s.p.p" joined by "/"); pending revocation: active,
 *   standby, warm-up; target epoch; target active, standby, warm-up; the active owner of
 *   tasks ("s.p=process" joined by "/"); standby and warm-up owners ("s.p=a,b" joined
 *   by "/"); owned tasks: "-" for none said, else "active|standby|warm-up".
 *
 * For each line: "STATE epoch previous A:... S:... W:... RA:... RS:... RW:..." (tasks
 * sorted, active ones with their epochs), or "ERROR " and the exception's message.
 * Run with Kafka 4.4's libs: java -cp 'libs/*' interop/StreamsCurrentAssignmentOracle.java
 */
public class StreamsCurrentAssignmentOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(";", -1);
            StreamsGroupMember member = new StreamsGroupMember.Builder("member")
                .setProcessId(f[0])
                .setState(MemberState.fromValue(Byte.parseByte(f[1])))
                .setMemberEpoch(Integer.parseInt(f[2]))
                .setPreviousMemberEpoch(Integer.parseInt(f[3]))
                .setAssignedTasks(new TasksTupleWithEpochs(withEpochs(f[4]), tasks(f[5]), tasks(f[6])))
                .setTasksPendingRevocation(new TasksTupleWithEpochs(withEpochs(f[7]), tasks(f[8]), tasks(f[9])))
                .build();
            Map<String, String> activeOwners = owners(f[14]);
            Map<String, String> standbyOwners = owners(f[15]);
            Map<String, String> warmupOwners = owners(f[16]);
            CurrentAssignmentBuilder builder = new CurrentAssignmentBuilder(member)
                .withTargetAssignment(Integer.parseInt(f[10]), new TasksTuple(tasks(f[11]), tasks(f[12]), tasks(f[13])))
                .withCurrentActiveTaskProcessId((s, p) -> activeOwners.get(s + "." + p))
                .withCurrentStandbyTaskProcessIds((s, p) -> processes(standbyOwners.get(s + "." + p)))
                .withCurrentWarmupTaskProcessIds((s, p) -> processes(warmupOwners.get(s + "." + p)));
            if (!f[17].equals("-")) {
                String[] owned = f[17].split("\\|", -1);
                builder.withOwnedAssignment(new TasksTuple(tasks(owned[0]), tasks(owned[1]), tasks(owned[2])));
            }
            try {
                StreamsGroupMember next = builder.build();
                System.out.println(next.state().value() + " " + next.memberEpoch() + " " + next.previousMemberEpoch()
                    + " A:" + shownWithEpochs(next.assignedTasks().activeTasksWithEpochs())
                    + " S:" + shown(next.assignedTasks().standbyTasks())
                    + " W:" + shown(next.assignedTasks().warmupTasks())
                    + " RA:" + shownWithEpochs(next.tasksPendingRevocation().activeTasksWithEpochs())
                    + " RS:" + shown(next.tasksPendingRevocation().standbyTasks())
                    + " RW:" + shown(next.tasksPendingRevocation().warmupTasks()));
            } catch (Exception e) {
                System.out.println("ERROR " + e.getMessage());
            }
        }
    }

    static Map<String, Set<Integer>> tasks(String text) {
        Map<String, Set<Integer>> out = new HashMap<>();
        if (!text.isEmpty()) {
            for (String group : text.split("/")) {
                String[] f = group.split("\\.");
                Set<Integer> partitions = new HashSet<>();
                for (int i = 1; i < f.length; i++) {
                    partitions.add(Integer.parseInt(f[i]));
                }
                out.put(f[0], partitions);
            }
        }
        return out;
    }

    static Map<String, Map<Integer, Integer>> withEpochs(String text) {
        Map<String, Map<Integer, Integer>> out = new HashMap<>();
        if (!text.isEmpty()) {
            for (String group : text.split("/")) {
                String[] f = group.split("\\.");
                Map<Integer, Integer> partitions = new HashMap<>();
                for (int i = 1; i < f.length; i++) {
                    String[] pe = f[i].split("@");
                    partitions.put(Integer.parseInt(pe[0]), Integer.parseInt(pe[1]));
                }
                out.put(f[0], partitions);
            }
        }
        return out;
    }

    static Map<String, String> owners(String text) {
        Map<String, String> out = new HashMap<>();
        if (!text.isEmpty()) {
            for (String entry : text.split("/")) {
                String[] kv = entry.split("=");
                out.put(kv[0], kv[1]);
            }
        }
        return out;
    }

    static Set<String> processes(String text) {
        Set<String> out = new HashSet<>();
        if (text != null) {
            for (String p : text.split(",")) {
                out.add(p);
            }
        }
        return out;
    }

    static String shown(Map<String, Set<Integer>> tasks) {
        TreeSet<String> all = new TreeSet<>();
        tasks.forEach((s, ps) -> ps.forEach(p -> all.add(s + "." + p)));
        return String.join(",", all);
    }

    static String shownWithEpochs(Map<String, Map<Integer, Integer>> tasks) {
        TreeSet<String> all = new TreeSet<>();
        tasks.forEach((s, ps) -> ps.forEach((p, e) -> all.add(s + "." + p + "@" + e)));
        return String.join(",", all);
    }
}
