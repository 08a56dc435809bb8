// Real streams groups for bench/large_cluster_groups.py: one Kafka Streams client per line of the spec file
// ("application.id topic,topic,..."), each a stateless topology of one sub-topology per topic (so one task per
// partition) on group.protocol=streams, in one JVM (a JVM per group would not fit the 2-core host beside a
// 10,000-partition cluster). Run from source:
//   java -cp KAFKA_STREAMS_CLASSPATH bench/StreamsGroupsBench.java BOOTSTRAP STATE_DIR SPEC_FILE
// Prints "started N" once every client is started; closes them all when stdin closes or on SIGTERM.

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;

public class StreamsGroupsBench {
    public static void main(String[] args) throws IOException {
        List<KafkaStreams> clients = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[2]))) {
            String[] cells = line.trim().split("\\s+");
            if (cells.length != 2) {
                continue;
            }
            Properties props = new Properties();
            props.put("application.id", cells[0]);
            props.put("bootstrap.servers", args[0]);
            props.put("group.protocol", "streams");
            props.put("state.dir", args[1] + "/" + cells[0]);
            props.put("num.stream.threads", "1");
            props.put("commit.interval.ms", "1000");
            props.put("auto.offset.reset", "earliest");
            StreamsBuilder builder = new StreamsBuilder();
            for (String topic : cells[1].split(",")) {  // a sub-topology a topic: a task a partition
                builder.stream(topic, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray())).foreach((k, v) -> { });
            }
            KafkaStreams streams = new KafkaStreams(builder.build(), props);
            streams.start();
            clients.add(streams);
        }
        Runnable closeAll = () -> clients.forEach(c -> c.close(Duration.ofSeconds(30)));
        Runtime.getRuntime().addShutdownHook(new Thread(closeAll));
        System.out.println("started " + clients.size());
        System.out.flush();
        while (System.in.read() != -1) {
            // the parent holds stdin open while the groups are wanted
        }
        System.exit(0);
    }
}
