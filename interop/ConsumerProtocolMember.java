import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a consumer group of Kafka 4's protocol (group.protocol=consumer), with
 * Kafka's own Java consumer: it commits after every poll that returned records and
 * before it gives partitions up, and prints what it owns and what it reads, one line
 * each ("owned 0,1,2", "read 3 17"), until the file named by its last argument exists;
 * then it closes (leaving the group) and prints "closed".
 *
 * Arguments: bootstrap servers, topic, group id, stop file.
 */
public class ConsumerProtocolMember {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        Path stop = Path.of(args[3]);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
            TreeSet<Integer> owned = new TreeSet<>();
            consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    consumer.commitSync();
                    partitions.forEach(tp -> owned.remove(tp.partition()));
                    print("owned " + join(owned));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    partitions.forEach(tp -> owned.add(tp.partition()));
                    print("owned " + join(owned));
                }
            });
            while (!Files.exists(stop)) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    print("read " + record.partition() + " " + record.offset());
                }
                if (!records.isEmpty()) {
                    consumer.commitSync();
                }
            }
        }
        print("closed");
    }

    private static String join(TreeSet<Integer> partitions) {
        StringBuilder out = new StringBuilder();
        for (Integer p : partitions) {
            out.append(out.length() == 0 ? "" : ",").append(p);
        }
        return out.toString();
    }

    private static synchronized void print(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
