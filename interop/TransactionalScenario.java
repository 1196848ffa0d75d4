// Kafka's Java producer in transactions, for tests/oracle/test_transactional_scenario.py:
// one committed transaction that also commits a group's offsets, one aborted transaction,
// then one more committed, each over both partitions of TOPIC. Run as a single-file
// source program with Kafka's libs on the class path:
//
//   java -cp "$KAFKA_LIBS/*" interop/TransactionalScenario.java BOOTSTRAP TOPIC TXN_ID GROUP
//
// Prints one line per finished transaction and exits 0 when all three are done.
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

public class TransactionalScenario {
    public static void main(String[] args) throws Exception {
        String topic = args[1];
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();

            producer.beginTransaction();
            send(producer, topic, "java-committed", 6);
            producer.sendOffsetsToTransaction(
                Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(3)),
                new ConsumerGroupMetadata(args[3]));
            producer.commitTransaction();
            System.out.println("committed");

            producer.beginTransaction();
            send(producer, topic, "java-aborted", 4);
            producer.flush();
            producer.abortTransaction();
            System.out.println("aborted");

            producer.beginTransaction();
            send(producer, topic, "java-again", 2);
            producer.commitTransaction();
            System.out.println("committed");
        }
    }

    static void send(KafkaProducer<String, String> producer, String topic, String prefix, int n)
            throws Exception {
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, prefix + "-" + i)).get();
        }
    }
}
