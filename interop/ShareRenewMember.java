import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One member of a share group with Kafka's own Java KafkaShareConsumer, in explicit
 * acknowledgement mode, that keeps the records it acquires for longer than their locks
 * last by renewing them (AcknowledgeType.RENEW, KIP-1222), then accepts them. It prints
 * each record it is handed ("got OFFSET DELIVERY_COUNT"), each failed commit ("error
 * PARTITION EXCEPTION"), and at the end how long it held the records and how many it
 * accepted ("held MS accepted N"), then closes and prints "closed".
 *
 * Arguments: bootstrap servers, topic, group id, the number of records to accept, and
 * how long to hold them (ms) before accepting.
 */
public class ShareRenewMember {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[2]);
        props.put("share.acknowledgement.mode", "explicit");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        int want = Integer.parseInt(args[3]);
        long holdMs = Long.parseLong(args[4]);
        TreeSet<Long> accepted = new TreeSet<>();
        long firstAt = -1;
        long deadline = System.currentTimeMillis() + holdMs + 120_000;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(args[1]));
            while (accepted.size() < want && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                long now = System.currentTimeMillis();
                if (firstAt < 0) {
                    firstAt = now;
                }
                boolean holding = now - firstAt < holdMs;
                for (ConsumerRecord<byte[], byte[]> record : records) {
                    System.out.println("got " + record.offset() + " " + record.deliveryCount().orElse((short) -1));
                    if (holding) {
                        consumer.acknowledge(record, AcknowledgeType.RENEW);
                    } else {
                        consumer.acknowledge(record, AcknowledgeType.ACCEPT);
                        accepted.add(record.offset());
                    }
                }
                Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
                for (Map.Entry<TopicIdPartition, Optional<KafkaException>> result : results.entrySet()) {
                    if (result.getValue().isPresent()) {
                        System.out.println("error " + result.getKey().partition() + " " + result.getValue().get());
                    }
                }
                if (holding) {
                    Thread.sleep(300); // renewed records come back at the next poll: renew at a pace
                }
            }
            System.out.println("held " + (System.currentTimeMillis() - firstAt) + " accepted " + accepted.size());
        }
        System.out.println("closed");
    }
}
