//! Issue 3's memory figure: what an established but idle TCP connection costs.
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};

#[test]
fn an_idle_established_connection_costs_under_10_kb_per_end() {
    let n = 50;
    let mut text = String::from("[scenario]\nname = \"idle\"\nduration = \"2s\"\n[[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"srv\"\n");
    text += "[[link]]\na = { node = \"srv\" }\nb = { node = \"r\" }\nnetem = \"rate 1gbit delay 1ms\"\n";
    text += "[[app]]\nname = \"sink\"\nkind = \"tcp-sink\"\nnode = \"srv\"\nport = 5001\n";
    for i in 0..n {
        text += &format!("[[node]]\nname = \"c{i}\"\n[[link]]\na = {{ node = \"c{i}\" }}\nb = {{ node = \"r\" }}\nnetem = \"rate 1gbit delay 1ms\"\n");
        // a thin source that writes 1000 bytes at 10 ms and then once an hour: idle after use
        text += &format!("[[app]]\nname = \"t{i}\"\nkind = \"tcp-thin\"\nnode = \"c{i}\"\ndst = \"srv:5001\"\nreplay = [\"10ms:1000\", \"3600s:1000\"]\n");
    }
    let sc = Scenario::from_text("<test>", &text, &[]).unwrap();
    let b = sc.build(&BuildOptions::default()).unwrap();
    let mut sim = b.sim;
    sim.run(Instant::ZERO + b.duration, Duration::ZERO, &mut |_| {});
    let srv = sim.node_id("srv").unwrap();
    assert_eq!(sim.stack(srv).unwrap().tcp().sockets().count(), n + 1, "listener + one connection per client");
    let st = sim.stack(srv).unwrap();
    let conns: Vec<usize> = st.tcp().sockets().filter(|&s| st.tcp().state(s) == Some(wirelab_tcp::TcpState::Established)).filter_map(|s| st.tcp().socket_memory(s)).collect();
    assert_eq!(conns.len(), n, "all connections established");
    let c0 = sim.node_id("c0").unwrap();
    let cst = sim.stack(c0).unwrap();
    let client: Vec<usize> = cst.tcp().sockets().filter_map(|s| cst.tcp().socket_memory(s)).collect();
    let per_server = conns.iter().sum::<usize>() / n;
    eprintln!("idle connection: {per_server} B at the server end, {} B at the client end", client[0]);
    assert!(per_server <= 10 * 1024 && client[0] <= 10 * 1024);
    let r = sim.finish().unwrap();
    assert_eq!(r.flows.iter().find(|f| f.name == "sink").unwrap().rx_bytes, 1000 * n as u64, "each client wrote once");
}
