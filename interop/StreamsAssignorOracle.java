import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;

/**
 * Kafka 4.4's own StickyTaskAssignor on the groups kt's tests describe, one per line of
 * standard input, for the oracle of kt's port (kt/broker/group/streams_assignor.py):
 *
 *   STANDBYS;SUBTOPOLOGIES;MEMBERS
 *
 * SUBTOPOLOGIES "id:tasks:stateful" joined by ","; MEMBERS "member|process|active|standby|
 * offsets" joined by "#", in the group's order, where active and standby are "sub.p.p"
 * joined by "/", offsets "sub.p=offset" joined by "/". For each line it prints the
 * assignment: "member=A:sub.p,sub.p;S:sub.p" per member in the input's order, joined by
 * " ", tasks sorted; or "ERROR " and the exception's message.
 *
 * Run with Kafka 4.4's libs: java -cp 'libs/*' interop/StreamsAssignorOracle.java
 */
public class StreamsAssignorOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split(";", -1);
            int standbys = Integer.parseInt(parts[0]);
            TreeMap<String, int[]> subtopologies = new TreeMap<>();
            for (String s : parts[1].split(",")) {
                String[] f = s.split(":");
                subtopologies.put(f[0], new int[]{Integer.parseInt(f[1]), Integer.parseInt(f[2])});
            }
            Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
            List<String> order = new ArrayList<>();
            for (String m : parts[2].split("#")) {
                String[] f = m.split("\\|", -1);
                order.add(f[0]);
                members.put(f[0], new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(), f[1], Map.of(),
                    tasks(f[2]), tasks(f[3]), Map.of(), offsets(f[4]), Map.of()));
            }
            TopologyDescriber topology = new TopologyDescriber() {
                public List<String> subtopologies() { return List.copyOf(subtopologies.keySet()); }
                public int maxNumInputPartitions(String id) { return subtopologies.get(id)[0]; }
                public boolean isStateful(String id) { return subtopologies.get(id)[1] == 1; }
            };
            try {
                GroupAssignment result = new StickyTaskAssignor().assign(
                    new GroupSpecImpl(members, new AssignmentConfigsImpl(standbys, List.of())), topology);
                List<String> out = new ArrayList<>();
                for (String member : order) {
                    MemberAssignment a = result.members().get(member);
                    out.add(member + "=A:" + shown(a.activeTasks()) + ";S:" + shown(a.standbyTasks()));
                }
                System.out.println(String.join(" ", out));
            } catch (Exception e) {
                System.out.println("ERROR " + e.getMessage());
            }
        }
    }

    static Map<String, Set<Integer>> tasks(String text) {
        Map<String, Set<Integer>> out = new HashMap<>();
        if (text.isEmpty()) {
            return out;
        }
        for (String group : text.split("/")) {
            String[] f = group.split("\\.");
            Set<Integer> partitions = new TreeSet<>();
            for (int i = 1; i < f.length; i++) {
                partitions.add(Integer.parseInt(f[i]));
            }
            out.put(f[0], partitions);
        }
        return out;
    }

    static Map<String, Map<Integer, Long>> offsets(String text) {
        Map<String, Map<Integer, Long>> out = new HashMap<>();
        if (text.isEmpty()) {
            return out;
        }
        for (String entry : text.split("/")) {
            String[] kv = entry.split("=");
            String[] task = kv[0].split("\\.");
            out.computeIfAbsent(task[0], k -> new HashMap<>()).put(Integer.parseInt(task[1]), Long.parseLong(kv[1]));
        }
        return out;
    }

    static String shown(Map<String, Set<Integer>> tasks) {
        TreeSet<String> all = new TreeSet<>();
        tasks.forEach((sub, partitions) -> partitions.forEach(p -> all.add(sub + "." + p)));
        return String.join(",", all);
    }
}
