<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>BenchmarksPage</name>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="67"/>
        <source>Load a prompt set</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="68"/>
        <source>Prompt sets (*.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="75"/>
        <source>Export the report</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="96"/>
        <source>Benchmarks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="104"/>
        <source>Requests one at a time, greedy, end-of-generation ignored, fresh KV cache per request and the expert cache kept — the method of moepack bench and of the published evaluation.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="115"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="120"/>
        <source>GGUF file, Ollama name or Expert Pack (default: the chat model)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="125"/>
        <source>Prompt set</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/BenchmarksPage.qml" line="129"/>
        <source>%1 (%n request(s)) — %2</source>
        <translation>
            <numerusform>%1 (%n request) — %2</numerusform>
            <numerusform>%1 (%n requests) — %2</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="132"/>
        <source>Load…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="134"/>
        <source>Max tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="145"/>
        <source>Baseline URL</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="149"/>
        <source>optional: an OpenAI-compatible server, e.g. http://127.0.0.1:8080</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="161"/>
        <source>Run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="167"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="181"/>
        <source>request %1 of %2 · %3 of %4 tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="205"/>
        <source>Decode tokens/s per request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="209"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="221"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="217"/>
        <source>Expert cache hit rate per request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="230"/>
        <source>Running request, per token: forward ms and SSD KiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="238"/>
        <source>SSD KiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <source>SSD MiB/token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="234"/>
        <source>token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="237"/>
        <source>forward ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="243"/>
        <source>Requests</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>system</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>prompt</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>completion</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>TTFT ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>prefill tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>decode tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>hit rate</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="260"/>
        <source>error: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="264"/>
        <source>Per data set, published figures beside ours</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>data set</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>source</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="268"/>
        <source>SSD GB/token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="284"/>
        <source>Published figures are from the prompt set (other models and machines): context, not a like-for-like comparison.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="291"/>
        <source>Export</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ChatPage</name>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="75"/>
        <source>+ New chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="79"/>
        <source>Conversations</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="122"/>
        <source>writing a reply…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="150"/>
        <source>Your conversations appear here.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="179"/>
        <source>New chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="190"/>
        <source>Benchmark running on %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="192"/>
        <source>%1 · %2 backend</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="200"/>
        <source>Rename</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="205"/>
        <source>Export</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="211"/>
        <source>Options</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="240"/>
        <source>No model is loaded, so this conversation cannot continue: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="241"/>
        <source>No model is loaded: open one from the Library to continue this conversation.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="254"/>
        <source>Reload</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="260"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="265"/>
        <source>Library</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="294"/>
        <source>A benchmark is using the model (%1). This conversation can be read and exported; it goes on when the benchmark has finished.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="299"/>
        <source>Benchmarks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="362"/>
        <source>This conversation was held with %1; its next reply will come from %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="363"/>
        <source>This conversation was held with %1, which is no longer on disk; its next reply will come from %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="248"/>
        <location filename="../ui/qml/ChatPage.qml" line="370"/>
        <source>Load %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="329"/>
        <source>Running on the CPU, not the GPU: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="333"/>
        <source>Dismiss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="414"/>
        <source>Ask something, for example:
What does &quot;salmon&quot; mean?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="452"/>
        <source>A reply is being written in “%1”. You can send here when it has finished, or stop it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="458"/>
        <source>Show it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="463"/>
        <source>Stop it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="487"/>
        <source>Message the model (Enter to send, Shift+Enter for a new line)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="504"/>
        <source>Send</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="512"/>
        <source>Stop</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="549"/>
        <source>System prompt</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="554"/>
        <source>Optional instructions for the model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="559"/>
        <source>Sampling</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="562"/>
        <source>Temperature (0 = greedy)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="563"/>
        <source>Top-p</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="564"/>
        <source>Top-k (0 = off)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="565"/>
        <source>Min-p</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="566"/>
        <source>Repetition penalty</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="567"/>
        <source>Max tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="568"/>
        <source>Seed (-1 = random)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="590"/>
        <source>Reset to defaults</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="607"/>
        <source>Rename…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="608"/>
        <source>Delete…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="618"/>
        <source>Delete “%1”?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="655"/>
        <source>Delete</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="648"/>
        <source>Its messages are deleted for good.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="659"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="667"/>
        <source>Rename conversation</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="689"/>
        <source>Export conversation</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="691"/>
        <source>Markdown (*.md)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="691"/>
        <source>JSON (*.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="698"/>
        <source>Export failed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="699"/>
        <source>Exported to %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ConvertWizardPage</name>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="35"/>
        <source>Folder for the Expert Pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>1. Source</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>2. Space</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>3. Options</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>4. Converting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>5. Verifying</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>Done</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>Failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="56"/>
        <source>The pack&apos;s files take %1. The build needs %2 free, a safety margin of %3 included.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="61"/>
        <source>%1 is free in %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="62"/>
        <source>Choose a folder for it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="66"/>
        <source>Shard-by-shard mode (deletes each source shard once it is in the pack and verified) needs %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="71"/>
        <source>Convert shard by shard, deleting the source as it goes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="76"/>
        <source>Choose the output folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="81"/>
        <source>Verify every expert&apos;s SHA-256 after building</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="89"/>
        <source>Delete the source: each shard as soon as its bytes are in the pack and verified</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="90"/>
        <source>Delete the source after the pack passes a full verify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="99"/>
        <source>An Ollama model&apos;s file stays where it is: Ollama&apos;s models may share it (`ollama rm` removes it).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="103"/>
        <source>Convert</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="118"/>
        <source>%1 · %2/s · %3 s left</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="120"/>
        <source>%1 · %2/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="125"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="133"/>
        <source>Delete the source (%1 freed); the pack passed its full verify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="140"/>
        <source>Delete source</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="146"/>
        <source>Chat now</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>DashboardPage</name>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="26"/>
        <source>%1 tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="97"/>
        <source>Expert cache and SSD</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/DashboardPage.qml" line="105"/>
        <source>%1 · %2 backend · %n token(s)</source>
        <translation>
            <numerusform>%1 · %2 backend · %n token</numerusform>
            <numerusform>%1 · %2 backend · %n tokens</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="107"/>
        <source>No model loaded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="120"/>
        <source>Hit rate</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="126"/>
        <source>Decode (last reply)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="129"/>
        <source>Prefill (last reply)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="131"/>
        <source>SSD read per token (last reply)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="132"/>
        <source>the decoded tokens&apos; pack_read_bytes / tokens (all tokens so far: %1)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="136"/>
        <source>Tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="137"/>
        <source>Cache hits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="138"/>
        <source>Cache misses</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="139"/>
        <source>Evictions</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="141"/>
        <source>Prefetched: used / read</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="145"/>
        <source>Cache slots used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="147"/>
        <source>%1 / %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="148"/>
        <source>resident</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="150"/>
        <source>Read from SSD</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="151"/>
        <source>Copied to the GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="154"/>
        <source>Misses served from RAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="155"/>
        <source>ram_tier_hits; tier of %1 slots, %2 MiB (cache_ram_mib); copied down: %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="162"/>
        <source>Buffered reads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="162"/>
        <source>fallback_count: reads without O_DIRECT</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="166"/>
        <source>I/O errors</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="176"/>
        <source>Cache occupancy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="188"/>
        <source>%1 of %2 MiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="190"/>
        <source>experts resident (no cache)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="208"/>
        <source>Cache hit rate</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="221"/>
        <source>token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="226"/>
        <source>per token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="234"/>
        <source>cumulative</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="246"/>
        <source>SSD reads per token (KiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="259"/>
        <source>Evictions per token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="281"/>
        <source>Experts in the cache (rows: MoE layers, columns: experts)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="317"/>
        <source>All experts are resident (no expert cache on this path)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>FirstRunPanel</name>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="34"/>
        <source>A benchmark is using the model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="35"/>
        <source>The GPU stopped working</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="36"/>
        <source>The model could not be loaded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="37"/>
        <source>No model loaded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="38"/>
        <source>Getting the model ready</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="47"/>
        <source>%1 is being benchmarked. The chat goes on when the benchmark has finished.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="82"/>
        <source>Stop converting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="98"/>
        <source>Reload</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="98"/>
        <source>Load again</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="104"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="114"/>
        <source>The GPU cannot be used again until MoePack restarts. Your conversations are saved; the restarted app opens this one.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="121"/>
        <source>Restart MoePack</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>LibraryPage</name>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="40"/>
        <source>Converting %1 to an Expert Pack in %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="67"/>
        <source>Add a model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="68"/>
        <source>GGUF models (*.gguf)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="68"/>
        <source>Expert Pack manifests (manifest.json)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="74"/>
        <source>Scan a folder for models</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="82"/>
        <source>Remove %1?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="102"/>
        <source>Also delete its files from disk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="109"/>
        <source>%1 will be freed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="110"/>
        <source>The files stay on disk; no space is freed.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="120"/>
        <source>Convert to an Expert Pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="216"/>
        <source>Converting a finished download</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="244"/>
        <source>Add file…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="245"/>
        <source>Scan folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="250"/>
        <source>Ollama model, e.g. qwen3:30b</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="254"/>
        <source>Add Ollama model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="258"/>
        <source>Refresh</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="272"/>
        <source>Memory for the model: dense weights, the expert cache and the context</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="265"/>
        <source>Plan the context for: memory (GiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="90"/>
        <source>Remove and delete files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="90"/>
        <source>Remove from the library</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="131"/>
        <source>Close</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="162"/>
        <source>Cancel the download of %1?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="169"/>
        <source>What was downloaded of it (and of the other files of its group) is deleted. Pause keeps it instead.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="173"/>
        <source>Keep it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="178"/>
        <source>Cancel and delete</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="188"/>
        <source>Stop the conversion?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="195"/>
        <source>What is written so far stays on disk; converting the same model again goes on from there.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="199"/>
        <source>Keep converting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="204"/>
        <source>Stop and close</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="274"/>
        <source>expert cache (MiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="281"/>
        <source>Starts at the Settings&apos; cache budget; a change here only plans</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/LibraryPage.qml" line="325"/>
        <source>… and %n more (in the log)</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="333"/>
        <source>Dismiss</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="362"/>
        <source>No models yet. Drop GGUF files or pack folders here, or scan a folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="404"/>
        <source>%1 (deleted)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="412"/>
        <source>%1 · %2 · %3 · %4 experts, top-%5 · %6</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="422"/>
        <source>KV cache %1 per token + %2 per sequence · %3 tokens of context next to a %4 expert cache in %5</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="429"/>
        <source>(memory - expert cache - dense weights - fixed state) / bytes per token, at most the trained context. %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="435"/>
        <source>pack ready</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="436"/>
        <source>pack building</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="437"/>
        <source>pack failed verify</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="438"/>
        <source>no pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="446"/>
        <source>Load</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="450"/>
        <source>Load %1 and chat with it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="454"/>
        <source>Convert…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="462"/>
        <source>Remove…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="475"/>
        <source>Downloads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="490"/>
        <source>https:// URL or owner/repo</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="495"/>
        <source>file or shard pattern, e.g. *Q2_K*.gguf</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="508"/>
        <source>SHA-256 (optional)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="512"/>
        <source>Convert when done</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="514"/>
        <source>Build an Expert Pack once verified; the space check counts the pack too</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="518"/>
        <source>Download</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="524"/>
        <source>Hub</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/LibraryPage.qml" line="535"/>
        <source>%n download(s)</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="540"/>
        <source>Clear finished</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="573"/>
        <source>%1 (file %2 of %3)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="595"/>
        <source>checking %1 of %2 already downloaded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="597"/>
        <source>queued</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="598"/>
        <source>cancelled</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="599"/>
        <source>done · %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="601"/>
        <source>paused · %1 of %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="603"/>
        <source>paused · %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="604"/>
        <source>asking the server</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="605"/>
        <source>retrying soon: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="606"/>
        <source>retrying soon</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="607"/>
        <source>verifying</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="609"/>
        <source>%1 of %2 · %3/s · %4</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="612"/>
        <source>%1 s left</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="618"/>
        <source>Resume</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="618"/>
        <source>Pause</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="94"/>
        <location filename="../ui/qml/LibraryPage.qml" line="624"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Main</name>
    <message>
        <location filename="../ui/qml/Main.qml" line="15"/>
        <source>MoePack Studio — %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="16"/>
        <source>MoePack Studio</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="97"/>
        <source>Loading “%1” unloads the model writing it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="97"/>
        <source>Load</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="139"/>
        <source>Chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="140"/>
        <source>Dashboard</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="141"/>
        <source>Models</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="142"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="143"/>
        <source>Library</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="144"/>
        <source>Benchmarks</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="201"/>
        <source>Benchmark</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="203"/>
        <source>Loading</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="204"/>
        <source>Error</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="204"/>
        <source>No model</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>MessageBubble</name>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="68"/>
        <source>You</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="68"/>
        <source>Assistant</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="100"/>
        <source>The reply failed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="126"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="131"/>
        <source>Save and re-run</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/MessageBubble.qml" line="161"/>
        <source>%n prompt token(s)</source>
        <translation>
            <numerusform>%n prompt token</numerusform>
            <numerusform>%n prompt tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/MessageBubble.qml" line="162"/>
        <source> · %n token(s)</source>
        <translation>
            <numerusform> · %n token</numerusform>
            <numerusform> · %n tokens</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="163"/>
        <source> · first token %1 ms · prefill %2 tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="165"/>
        <source> · decode %1 tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="166"/>
        <source> · stopped</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="167"/>
        <source> · length limit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="168"/>
        <source> · context full: start a new chat or raise the context length in Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="188"/>
        <source>generating…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="199"/>
        <source>Copy</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="199"/>
        <source>Copied</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="217"/>
        <source>Edit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="232"/>
        <source>Regenerate</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ModelPage</name>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="25"/>
        <source>Cannot open the model:
%1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="46"/>
        <source>Model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="54"/>
        <source>Architecture</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="55"/>
        <source>File</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="61"/>
        <source>Expert Pack: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="61"/>
        <source>GGUF: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="66"/>
        <source>Size on disk</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="67"/>
        <source>Tensors</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="68"/>
        <source>Tokenizer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="69"/>
        <source>Routed experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="71"/>
        <source>%1 per layer, top-%2, %3 shared</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="74"/>
        <source>All routed experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="79"/>
        <source>Hyperparameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="105"/>
        <source>One routed expert per block (KiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="133"/>
        <source>expert KiB</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="139"/>
        <source>Layers with routed experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="155"/>
        <source>blk.%1 — %2 experts × %3 KiB</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <location filename="../ui/downloader.cpp" line="57"/>
        <source>empty file name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="59"/>
        <source>&apos;%1&apos; is not a file name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="60"/>
        <source>&apos;%1&apos; starts with a dot</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="61"/>
        <source>file name longer than 255 characters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="64"/>
        <source>&apos;%1&apos; contains a path separator or control character</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="68"/>
        <source>&apos;%1&apos; ends in %2, which MoePack uses for its own files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="80"/>
        <location filename="../ui/downloader.cpp" line="83"/>
        <source>&apos;%1&apos; is not owner/repository</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="88"/>
        <source>&apos;%1&apos; is not a file path inside the repository</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="92"/>
        <source>the hub address %1 is not an https:// URL</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="264"/>
        <source>Out of memory while benchmarking.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="74"/>
        <source>the hub&apos;s model info is not a JSON object (offset %1: %2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="78"/>
        <source>the hub&apos;s model info has no &quot;siblings&quot; array</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="81"/>
        <source>the hub&apos;s tree listing is not a JSON array (offset %1: %2)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="91"/>
        <source>tree entry %1 has no &quot;path&quot;</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="94"/>
        <source>tree entry %1 (%2): &quot;size&quot; is not a non-negative number</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="100"/>
        <source>tree entry %1 (%2): &quot;lfs.oid&quot; is not 64 hex digits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="109"/>
        <source>siblings[%1] has no &quot;rfilename&quot;</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="123"/>
        <source>no file name or pattern given</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="131"/>
        <source>refused &apos;%1&apos; from the hub listing: it would leave the models folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="136"/>
        <source>refused &apos;%1&apos; from the hub listing: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="138"/>
        <source>&apos;%1&apos; matches two files named %2; use a narrower pattern</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="142"/>
        <source>no file in the repository matches &apos;%1&apos;</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="225"/>
        <source>Per-token timeline: forward ms per token (line, left axis), SSD KB read per token (bars, right axis)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="229"/>
        <source>No per-token data in this report.</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pdf_report.cpp" line="278"/>
        <source>%n token(s); x: token in the run, requests one after another (dashed: request start).</source>
        <translation>
            <numerusform>%n token; x: token in the run, requests one after another (dashed: request start).</numerusform>
            <numerusform>%n tokens; x: token in the run, requests one after another (dashed: request start).</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="343"/>
        <location filename="../ui/pdf_report.cpp" line="351"/>
        <source>MoePack benchmark report</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="356"/>
        <source>Machine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="359"/>
        <source>driver</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="361"/>
        <source>CPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="362"/>
        <source>logical cores</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="363"/>
        <source>RAM</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="364"/>
        <source>GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="364"/>
        <source>none</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="365"/>
        <source>OS</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="365"/>
        <source>kernel</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="367"/>
        <source>Storage</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="370"/>
        <source>Model and pack identity</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="371"/>
        <source>Path</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="372"/>
        <source>Format</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="373"/>
        <source>layers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="374"/>
        <source>experts, top-</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="376"/>
        <source>Identity</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="377"/>
        <source>MoePack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="381"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="382"/>
        <source>Run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="382"/>
        <source>mode %1, temperature 0, %2 completion tokens per request, ignore_eos %3, fresh KV cache per request, expert cache kept between requests</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="385"/>
        <source>Backend</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="386"/>
        <source>expert cache slots of</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="388"/>
        <source>Not on the GPU</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="390"/>
        <source>Host-RAM tier</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="390"/>
        <source>slots (cache_ram_mib)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="396"/>
        <source>Engine settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="397"/>
        <source>Prompt set</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="399"/>
        <source>requests</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="402"/>
        <source>Requests</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="412"/>
        <source>error: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>data set</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>system</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>prompt</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <source>completion</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <source>TTFT ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>prefill tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>decode tok/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="422"/>
        <location filename="../ui/pdf_report.cpp" line="446"/>
        <source>hit rate</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="422"/>
        <source>SSD/token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="426"/>
        <source>Aggregates per data set, published figures beside ours</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="439"/>
        <location filename="../ui/pdf_report.cpp" line="478"/>
        <source>published: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>group</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>source</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="446"/>
        <source>SSD GB/token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="446"/>
        <source>TTFT mean ms</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="448"/>
        <source>Aggregates are ratios of sums over successful requests. Published figures come from the prompt set (other models and machines): context, not a like-for-like comparison.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="454"/>
        <source>Charts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="496"/>
        <source>Decode tokens/s per request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="496"/>
        <source>tokens/s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="499"/>
        <source>Expert cache hit rate per request</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="499"/>
        <source>unique (layer, expert) keys per step</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/model_library.cpp" line="480"/>
        <source>the files of Ollama model %1 are shared blobs of Ollama&apos;s store; remove it with `ollama rm %1`</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/model_library.cpp" line="507"/>
        <source>%1 is outside MoePack&apos;s folders (%2); MoePack only deletes files there</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ReplyStopGuard</name>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="43"/>
        <source>Quitting closes the studio.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="43"/>
        <source>Quit</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="60"/>
        <source>Stop the reply being written?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="84"/>
        <source>%1 The reply being written in “%2” stops there; what it has written so far is kept.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="98"/>
        <source>Cancel</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="134"/>
        <source>Settings</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="140"/>
        <source>Engine</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="141"/>
        <source>Backend</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="144"/>
        <source>CPU threads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="145"/>
        <source>0 = automatic (%1: all cores but one, for the UI)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="150"/>
        <source>Context length (tokens)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="153"/>
        <source>The loaded model runs with %1: its trained context.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="159"/>
        <source>Expert cache and SSD reads</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="162"/>
        <source>Cache budget (MiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="163"/>
        <source>cache_vram_mib: VRAM on CUDA, host RAM on the CPU backend</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="165"/>
        <source>Keep free (MiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="168"/>
        <source>Which expert the cache evicts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="174"/>
        <source>Host-RAM tier (MiB)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="175"/>
        <source>cache_ram_mib: experts the VRAM cache evicts wait here instead of on the SSD (CUDA). auto: half the free RAM, keeping 2 GiB free, now %1 MiB; 0: off</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="180"/>
        <source>Which evictions the RAM tier keeps</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="169"/>
        <source>cache_policy: hybrid: the least used, and of those the least recently used; lru: the least recently used; lfu: the least used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="181"/>
        <source>cache_ram_admission (CUDA): frequency: only experts used more often than the one they would push out (far fewer copies down); all: every one</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="184"/>
        <source>Staging buffers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="185"/>
        <source>Reads per expert</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="191"/>
        <source>Direct I/O (O_DIRECT)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="204"/>
        <source>Read the next layer&apos;s experts ahead</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="217"/>
        <source>Check each expert&apos;s SHA-256 on its first read</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="225"/>
        <source>A damaged Expert Pack stops the reply with an error naming the expert, instead of answering from wrong weights.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="242"/>
        <source>Load a model to see how many experts these values hold. Free memory: %1 MiB.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="244"/>
        <source>%1 MiB usable of %2 MiB free → %3 expert slots of %4 MiB.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="255"/>
        <source>Defaults for new conversations</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="256"/>
        <source>Temperature</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="256"/>
        <source>0 = greedy (reproducible)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="257"/>
        <source>Top-p</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="258"/>
        <source>Top-k</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="258"/>
        <source>0 = off</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="259"/>
        <source>Min-p</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="260"/>
        <source>Repetition penalty</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="261"/>
        <source>Max tokens per reply</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="262"/>
        <source>Seed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="262"/>
        <source>-1 = random</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="263"/>
        <source>System prompt</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="267"/>
        <source>Models and language</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="268"/>
        <source>Expert Pack folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="273"/>
        <source>Convert GGUF models to Expert Packs when opened</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="284"/>
        <source>Language</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="290"/>
        <source>System</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="325"/>
        <source>Fix the highlighted values first.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="327"/>
        <source>The loaded model would not start with these cache values (see the preview); change them to apply.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="328"/>
        <source>Changes are not applied yet.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="331"/>
        <source>Reset to defaults</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="337"/>
        <source>Revert</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="346"/>
        <location filename="../ui/qml/SettingsPage.qml" line="356"/>
        <source>Apply</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="356"/>
        <source>Applying these settings reloads the model.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>buildphases</name>
    <message>
        <location filename="../ui/qml/buildphases.js" line="6"/>
        <source>Planning the Expert Pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="7"/>
        <source>Checking free space and direct I/O</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="8"/>
        <source>Writing the dense weights</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="9"/>
        <source>Writing the experts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="10"/>
        <source>Finalising the pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="11"/>
        <source>Verifying the pack</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="12"/>
        <source>Pack ready</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="13"/>
        <source>Opening the model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="14"/>
        <source>Waiting for the benchmark to finish: it has the memory until then</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="19"/>
        <source>Preparing</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::BenchViewModel</name>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="139"/>
        <source>Choose a model to benchmark.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="144"/>
        <source>Choose a prompt set.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="148"/>
        <source>The chat engine is busy; wait for it (or stop the reply) before benchmarking.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="178"/>
        <source>Unloading the chat model</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="193"/>
        <location filename="../ui/bench_view_model.cpp" line="363"/>
        <source>Cancelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="196"/>
        <source>Loading %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="292"/>
        <source>Model loaded</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="304"/>
        <source>%1: request %2 of %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="325"/>
        <source>%1: request %2 of %3 done</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="361"/>
        <source>Finished in %1 s</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="364"/>
        <source>Cancelled</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="364"/>
        <source>Failed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="378"/>
        <source>Cancelling</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="402"/>
        <source>published: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="423"/>
        <source>Run a benchmark first.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::ChatViewModel</name>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="59"/>
        <source>Cannot open the conversation database: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="345"/>
        <source>New chat</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="394"/>
        <source>The model is not ready.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="467"/>
        <source>There is no conversation to export.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="545"/>
        <source>The reply in “%1” failed: %2</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::ConvertWizard</name>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="146"/>
        <source>Not enough space in %1: the pack needs %2 bytes, %3 bytes are free</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="151"/>
        <source>. The shard-by-shard mode fits: it needs %1 bytes, because it deletes each source shard as soon as its bytes are in the pack and verified (the source is gone afterwards).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="155"/>
        <source>; even the shard-by-shard mode needs %1 bytes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="169"/>
        <source>Shard-by-shard mode: needs %1 bytes of the %2 free; each source shard is deleted once its bytes are in the pack and verified.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="253"/>
        <source>Verification cancelled. The pack is built but not verified; convert again to verify it (nothing is rebuilt).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="258"/>
        <source>Cancelled. Nothing was finalised; start again to resume.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="270"/>
        <source>The folder already held this model&apos;s finished pack: nothing was rebuilt.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="272"/>
        <source>Resumed from the last checkpoint of the interrupted conversion.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="329"/>
        <source>%1 is a blob of Ollama&apos;s store, which its models may share: remove the model with `ollama rm`</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="336"/>
        <source>cannot delete %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="341"/>
        <source>Source deleted.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::Downloader</name>
    <message>
        <location filename="../ui/downloader.cpp" line="131"/>
        <source>the partial file %1 could not be read back</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="167"/>
        <source>refused file name %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="242"/>
        <source>only https:// downloads are allowed: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="254"/>
        <source>refused file name from %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="258"/>
        <source>cannot create the models folder %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="263"/>
        <source>refused file name %1: it leaves the models folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="268"/>
        <source>%1 already exists; remove it first</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="272"/>
        <source>the expected SHA-256 &apos;%1&apos; is not 64 hex digits</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="354"/>
        <location filename="../ui/downloader.cpp" line="587"/>
        <source>TLS verification failed for %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="358"/>
        <location filename="../ui/downloader.cpp" line="591"/>
        <source>HTTP %1 for %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="376"/>
        <source>%1: the server announces %2 bytes, the hub listing %3 bytes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="441"/>
        <source>cannot open %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="445"/>
        <source>cannot truncate %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="480"/>
        <source>gave up on %1 after %2 restarts; last: %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="503"/>
        <source>the server answered a different range or file (Content-Range &apos;%1&apos;, ETag &apos;%2&apos;)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="530"/>
        <source>the file changed on the server between HEAD and GET</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="545"/>
        <source>the server sent more than the announced %1 bytes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="549"/>
        <location filename="../ui/downloader.cpp" line="640"/>
        <source>cannot write %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="579"/>
        <source>the server refused the range from byte %1 (416)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="599"/>
        <source>the body ended at byte %1 of %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/downloader.cpp" line="618"/>
        <source>download of %1 failed after %n attempt(s): %2</source>
        <translation>
            <numerusform>download of %1 failed after %n attempt: %2</numerusform>
            <numerusform>download of %1 failed after %n attempts: %2</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="647"/>
        <source>%1 has %2 bytes, expected %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="658"/>
        <source>hub listing</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="660"/>
        <source>%1: SHA-256 mismatch (expected %2 from the %3, got %4); %5</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="684"/>
        <source>cannot install %1 as %2: %2 already exists and was not replaced; the verified download is kept as %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="687"/>
        <source>cannot rename %1 to %2: %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="657"/>
        <source>user</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="391"/>
        <source>not enough space in %1: %2 needed (%3 bytes), %4 free (%5 bytes)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="659"/>
        <source>server</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="662"/>
        <source>the file was kept aside as %1 and not installed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="663"/>
        <source>the file was not installed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="718"/>
        <source>cannot write the download state: %1</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::DownloadsViewModel</name>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="257"/>
        <source>no certificate in the CA bundle %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="272"/>
        <source>refused download %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="272"/>
        <source>not a valid URL</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="287"/>
        <source>refused download %1: only https:// addresses are downloaded (TLS, certificate checked)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="320"/>
        <source>%1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="324"/>
        <source>a SHA-256 can only be given for a single file; &apos;%1&apos; matches %2 files</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="383"/>
        <source>not enough space in %1: %2 needed (%3 bytes), %4 free (%5 bytes)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="388"/>
        <source> (the download and the Expert Pack built from it)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="390"/>
        <source>; the downloads already in the list will still take %1 of it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="402"/>
        <source>%1 already exists; remove it first</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="410"/>
        <source>%1 is already in the download list</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="434"/>
        <source>cannot record the download: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="549"/>
        <source>position %1 of the group</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="559"/>
        <source>the download of %1 is incomplete (missing: %2); it was not added to the library</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="598"/>
        <source>the download list is already kept in %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="609"/>
        <source>the download list cannot be kept: %1</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="652"/>
        <source>convert %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::EngineController</name>
    <message>
        <location filename="../ui/engine_worker.cpp" line="481"/>
        <source>MoePack could not be restarted (%1). Close it and start it again.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::EngineWorker</name>
    <message>
        <location filename="../ui/engine_worker.cpp" line="216"/>
        <source>Out of memory while loading %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="219"/>
        <source>The conversion of %1 was cancelled.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="233"/>
        <source>No model is loaded.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="271"/>
        <source>Out of memory during generation.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::HubLister</name>
    <message>
        <location filename="../ui/library_hub.cpp" line="153"/>
        <source>TLS verification failed for %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="157"/>
        <source>the hub has no public repository %1 (HTTP %2 for %3)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="166"/>
        <source>could not reach %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="170"/>
        <source>listing %1 failed: HTTP %2 %3</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="199"/>
        <source>hub listing of %1: %2</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::LibraryViewModel</name>
    <message numerus="yes">
        <location filename="../ui/library_view_model.cpp" line="140"/>
        <source>%n model(s) added</source>
        <translation>
            <numerusform>%n model added</numerusform>
            <numerusform>%n models added</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/library_view_model.cpp" line="167"/>
        <source>%n model(s) found in %1</source>
        <translation>
            <numerusform>%n model found in %1</numerusform>
            <numerusform>%n models found in %1</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="174"/>
        <source>Ollama model %1 added</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="186"/>
        <source>Removed; %1 freed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="202"/>
        <source>unknown model</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>moepack::ui::ModelInspector</name>
    <message numerus="yes">
        <location filename="../ui/model_inspector.cpp" line="90"/>
        <source>%1 (%2), %n tokens</source>
        <translation>
            <numerusform>%1 (%2), %n token</numerusform>
            <numerusform>%1 (%2), %n tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>moepack::ui::SettingsViewModel</name>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="163"/>
        <source>Choose auto, cpu or cuda.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="165"/>
        <source>Choose hybrid, lru or lfu.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="167"/>
        <source>Choose frequency or all.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="168"/>
        <source>Unknown language.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="171"/>
        <source>Choose a folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="173"/>
        <source>Give the whole path (from /).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="175"/>
        <location filename="../ui/settings_view_model.cpp" line="183"/>
        <source>%1 is a file, not a folder.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="176"/>
        <source>MoePack cannot write in %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="185"/>
        <source>MoePack cannot create a folder in %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="206"/>
        <source>Enter a number.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="211"/>
        <source>Between %1 and %2.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="210"/>
        <source>Enter a whole number.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="200"/>
        <source>Enter auto or a whole number of MiB.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="214"/>
        <location filename="../ui/settings_view_model.cpp" line="218"/>
        <source>Unknown setting %1.</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/settings_view_model.cpp" line="344"/>
        <source>%n slot(s) cannot hold one layer&apos;s %1 selected experts; the engine would refuse to start.</source>
        <translation>
            <numerusform>%n slot cannot hold one layer&apos;s %1 selected experts; the engine would refuse to start.</numerusform>
            <numerusform>%n slots cannot hold one layer&apos;s %1 selected experts; the engine would refuse to start.</numerusform>
        </translation>
    </message>
</context>
</TS>
