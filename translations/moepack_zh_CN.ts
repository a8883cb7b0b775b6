<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>BenchmarksPage</name>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="67"/>
        <source>Load a prompt set</source>
        <translation>加载提示词集</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="68"/>
        <source>Prompt sets (*.json)</source>
        <translation>提示词集 (*.json)</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="75"/>
        <source>Export the report</source>
        <translation>导出报告</translation>
    </message>
    <message>
        <source>Save</source>
        <translation type="vanished">保存</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="96"/>
        <source>Benchmarks</source>
        <translation>基准测试</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="104"/>
        <source>Requests one at a time, greedy, end-of-generation ignored, fresh KV cache per request and the expert cache kept — the method of moepack bench and of the published evaluation.</source>
        <translation>逐个发送请求，贪心采样，忽略生成结束标记，每个请求使用全新的 KV 缓存并保留专家缓存——与 moepack bench 及已发布评测所用的方法相同。</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="115"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="120"/>
        <source>GGUF file, Ollama name or Expert Pack (default: the chat model)</source>
        <translation>GGUF 文件、Ollama 名称或专家包（默认：当前聊天模型）</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="125"/>
        <source>Prompt set</source>
        <translation>提示词集</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/BenchmarksPage.qml" line="129"/>
        <source>%1 (%n request(s)) — %2</source>
        <translation>
            <numerusform>%1（%n 个请求）— %2</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="132"/>
        <source>Load…</source>
        <translation>加载…</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="134"/>
        <source>Max tokens</source>
        <translation>最大词元数</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="145"/>
        <source>Baseline URL</source>
        <translation>基线网址</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="149"/>
        <source>optional: an OpenAI-compatible server, e.g. http://127.0.0.1:8080</source>
        <translation>可选：兼容 OpenAI 的服务器，例如 http://127.0.0.1:8080</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="161"/>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="167"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="181"/>
        <source>request %1 of %2 · %3 of %4 tokens</source>
        <translation>请求 %1 / %2 · 词元 %3 / %4</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="205"/>
        <source>Decode tokens/s per request</source>
        <translation>每个请求的解码速度（词元/秒）</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="209"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="221"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>request</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="217"/>
        <source>Expert cache hit rate per request</source>
        <translation>每个请求的专家缓存命中率</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="230"/>
        <source>Running request, per token: forward ms and SSD KiB</source>
        <translation>当前请求的逐词元数据：前向耗时 ms 与 SSD 读取 KiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="238"/>
        <source>SSD KiB</source>
        <translation>SSD KiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <source>SSD MiB/token</source>
        <translation>SSD MiB/词元</translation>
    </message>
    <message>
        <source>Running request, per token: forward ms and SSD KB</source>
        <translation type="vanished">当前请求的逐词元数据：前向耗时 ms 与 SSD 读取 KB</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="234"/>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="237"/>
        <source>forward ms</source>
        <translation>前向 ms</translation>
    </message>
    <message>
        <source>SSD KB</source>
        <translation type="vanished">SSD KB</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="243"/>
        <source>Requests</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>system</source>
        <translation>系统</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>prompt</source>
        <translation>提示词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>completion</source>
        <translation>生成词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="246"/>
        <source>TTFT ms</source>
        <translation>TTFT ms</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>prefill tok/s</source>
        <translation>预填充词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>decode tok/s</source>
        <translation>解码词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="247"/>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>hit rate</source>
        <translation>命中率</translation>
    </message>
    <message>
        <source>SSD KB/token</source>
        <translation type="vanished">SSD KB/词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="260"/>
        <source>error: %1</source>
        <translation>错误：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="264"/>
        <source>Per data set, published figures beside ours</source>
        <translation>按数据集汇总：已发布数据与本次结果对照</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>data set</source>
        <translation>数据集</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="267"/>
        <source>source</source>
        <translation>来源</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="268"/>
        <source>SSD GB/token</source>
        <translation>SSD GB/词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="284"/>
        <source>Published figures are from the prompt set (other models and machines): context, not a like-for-like comparison.</source>
        <translation>已发布数据来自提示词集（其他模型和机器）：仅供参考，并非同等条件下的对比。</translation>
    </message>
    <message>
        <location filename="../ui/qml/BenchmarksPage.qml" line="291"/>
        <source>Export</source>
        <translation>导出</translation>
    </message>
</context>
<context>
    <name>ChatPage</name>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="75"/>
        <source>+ New chat</source>
        <translation>+ 新建聊天</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="79"/>
        <source>Conversations</source>
        <translation>对话</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="122"/>
        <source>writing a reply…</source>
        <translation>正在写回复…</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="150"/>
        <source>Your conversations appear here.</source>
        <translation>你的对话会显示在这里。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="179"/>
        <source>New chat</source>
        <translation>新聊天</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="190"/>
        <source>Benchmark running on %1</source>
        <translation>基准测试正在使用 %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="192"/>
        <source>%1 · %2 backend</source>
        <translation>%1 · %2 后端</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="200"/>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="205"/>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="211"/>
        <source>Options</source>
        <translation>选项</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="240"/>
        <source>No model is loaded, so this conversation cannot continue: %1</source>
        <translation>未加载模型,此对话无法继续:%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="241"/>
        <source>No model is loaded: open one from the Library to continue this conversation.</source>
        <translation>未加载模型:请从模型库打开一个模型以继续此对话。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="254"/>
        <source>Reload</source>
        <translation>重新加载</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="260"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="265"/>
        <source>Library</source>
        <translation>模型库</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="294"/>
        <source>A benchmark is using the model (%1). This conversation can be read and exported; it goes on when the benchmark has finished.</source>
        <translation>基准测试正在使用模型（%1）。此对话可以阅读和导出；基准测试结束后即可继续。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="299"/>
        <source>Benchmarks</source>
        <translation>基准测试</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="362"/>
        <source>This conversation was held with %1; its next reply will come from %2.</source>
        <translation>此对话使用的是 %1；它的下一条回复将来自 %2。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="363"/>
        <source>This conversation was held with %1, which is no longer on disk; its next reply will come from %2.</source>
        <translation>此对话使用的是 %1，该模型已不在磁盘上；它的下一条回复将来自 %2。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="248"/>
        <location filename="../ui/qml/ChatPage.qml" line="370"/>
        <source>Load %1</source>
        <translation>加载 %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="329"/>
        <source>Running on the CPU, not the GPU: %1</source>
        <translation>正在 CPU 而非 GPU 上运行：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="333"/>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="414"/>
        <source>Ask something, for example:
What does &quot;salmon&quot; mean?</source>
        <translation>问点什么，例如：
What does &quot;salmon&quot; mean?</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="452"/>
        <source>A reply is being written in “%1”. You can send here when it has finished, or stop it.</source>
        <translation>正在“%1”中写回复。写完后即可在此发送，也可以停止它。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="458"/>
        <source>Show it</source>
        <translation>查看</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="463"/>
        <source>Stop it</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="487"/>
        <source>Message the model (Enter to send, Shift+Enter for a new line)</source>
        <translation>给模型发消息（Enter 发送，Shift+Enter 换行）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="504"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="512"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="549"/>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="554"/>
        <source>Optional instructions for the model</source>
        <translation>给模型的可选指令</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="559"/>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="562"/>
        <source>Temperature (0 = greedy)</source>
        <translation>温度（0 = 贪心）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="563"/>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="564"/>
        <source>Top-k (0 = off)</source>
        <translation>Top-k（0 = 关闭）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="565"/>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="566"/>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="567"/>
        <source>Max tokens</source>
        <translation>最大词元数</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="568"/>
        <source>Seed (-1 = random)</source>
        <translation>随机种子（-1 = 随机）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="590"/>
        <source>Reset to defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="607"/>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="608"/>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="618"/>
        <source>Delete “%1”?</source>
        <translation>删除“%1”?</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="648"/>
        <source>Its messages are deleted for good.</source>
        <translation>其消息将被永久删除。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="655"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="659"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="667"/>
        <source>Rename conversation</source>
        <translation>重命名对话</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="689"/>
        <source>Export conversation</source>
        <translation>导出对话</translation>
    </message>
    <message>
        <source>Save</source>
        <translation type="vanished">保存</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="691"/>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="691"/>
        <source>JSON (*.json)</source>
        <translation>JSON (*.json)</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="698"/>
        <source>Export failed: %1</source>
        <translation>导出失败：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ChatPage.qml" line="699"/>
        <source>Exported to %1</source>
        <translation>已导出到 %1</translation>
    </message>
</context>
<context>
    <name>ConvertWizardPage</name>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="35"/>
        <source>Folder for the Expert Pack</source>
        <translation>专家包的存放文件夹</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>1. Source</source>
        <translation>1. 源文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>2. Space</source>
        <translation>2. 空间</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>3. Options</source>
        <translation>3. 选项</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="44"/>
        <source>4. Converting</source>
        <translation>4. 正在转换</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>5. Verifying</source>
        <translation>5. 正在校验</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>Done</source>
        <translation>完成</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="45"/>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>The pack needs %1 (its files, %2, and a safety margin of %3).</source>
        <translation type="vanished">专家包需要 %1(其文件 %2,加上 %3 的安全余量)。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="56"/>
        <source>The pack&apos;s files take %1. The build needs %2 free, a safety margin of %3 included.</source>
        <translation>专家包的文件占 %1。构建需要 %2 的可用空间，含 %3 的安全余量。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="61"/>
        <source>%1 is free in %2.</source>
        <translation>%2 中可用 %1。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="62"/>
        <source>Choose a folder for it.</source>
        <translation>请为它选择一个文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="66"/>
        <source>Shard-by-shard mode (deletes each source shard once it is in the pack and verified) needs %1</source>
        <translation>逐分片模式（每个源分片写入专家包并通过校验后即删除）需要 %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="71"/>
        <source>Convert shard by shard, deleting the source as it goes</source>
        <translation>逐分片转换，边转换边删除源文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="76"/>
        <source>Choose the output folder…</source>
        <translation>选择输出文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="81"/>
        <source>Verify every expert&apos;s SHA-256 after building</source>
        <translation>构建完成后校验每个专家的 SHA-256</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="89"/>
        <source>Delete the source: each shard as soon as its bytes are in the pack and verified</source>
        <translation>删除源文件：每个分片的数据写入专家包并通过校验后立即删除</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="90"/>
        <source>Delete the source after the pack passes a full verify</source>
        <translation>专家包通过完整校验后删除源文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="99"/>
        <source>An Ollama model&apos;s file stays where it is: Ollama&apos;s models may share it (`ollama rm` removes it).</source>
        <translation>Ollama 模型的文件保留在原处：Ollama 的多个模型可能共用它（用 `ollama rm` 删除）。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="103"/>
        <source>Convert</source>
        <translation>转换</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="118"/>
        <source>%1 · %2/s · %3 s left</source>
        <translation>%1 · %2/s · 剩余 %3 秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="120"/>
        <source>%1 · %2/s</source>
        <translation>%1 · %2/s</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="125"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="133"/>
        <source>Delete the source (%1 freed); the pack passed its full verify</source>
        <translation>删除源文件（释放 %1）；专家包已通过完整校验</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="140"/>
        <source>Delete source</source>
        <translation>删除源文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/ConvertWizardPage.qml" line="146"/>
        <source>Chat now</source>
        <translation>开始聊天</translation>
    </message>
</context>
<context>
    <name>DashboardPage</name>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="26"/>
        <source>%1 tok/s</source>
        <translation>%1 词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="97"/>
        <source>Expert cache and SSD</source>
        <translation>专家缓存与 SSD</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/DashboardPage.qml" line="105"/>
        <source>%1 · %2 backend · %n token(s)</source>
        <translation>
            <numerusform>%1 · %2 后端 · %n 个词元</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="107"/>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="120"/>
        <source>Hit rate</source>
        <translation>命中率</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="126"/>
        <source>Decode (last reply)</source>
        <translation>解码(上一条回复)</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="129"/>
        <source>Prefill (last reply)</source>
        <translation>预填充(上一条回复)</translation>
    </message>
    <message>
        <source>SSD read per token</source>
        <translation type="vanished">每词元 SSD 读取</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="131"/>
        <source>SSD read per token (last reply)</source>
        <translation>每词元 SSD 读取(上一条回复)</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="132"/>
        <source>the decoded tokens&apos; pack_read_bytes / tokens (all tokens so far: %1)</source>
        <translation>解码词元的 pack_read_bytes / 词元数(迄今所有词元:%1)</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="136"/>
        <source>Tokens</source>
        <translation>词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="137"/>
        <source>Cache hits</source>
        <translation>缓存命中</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="138"/>
        <source>Cache misses</source>
        <translation>缓存未命中</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="139"/>
        <source>Evictions</source>
        <translation>驱逐</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="141"/>
        <source>Prefetched: used / read</source>
        <translation>预取:已用 / 已读</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="145"/>
        <source>Cache slots used</source>
        <translation>已用缓存槽</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="147"/>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="148"/>
        <source>resident</source>
        <translation>常驻</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="150"/>
        <source>Read from SSD</source>
        <translation>从 SSD 读取</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="151"/>
        <source>Copied to the GPU</source>
        <translation>复制到 GPU</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="154"/>
        <source>Misses served from RAM</source>
        <translation>从内存取回的未命中</translation>
    </message>
    <message>
        <source>ram_tier_hits (cache_ram_mib); copied down: %1</source>
        <translation type="vanished">ram_tier_hits（cache_ram_mib）；已复制到内存：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="155"/>
        <source>ram_tier_hits; tier of %1 slots, %2 MiB (cache_ram_mib); copied down: %3</source>
        <translation>ram_tier_hits；内存层 %1 个槽位，%2 MiB（cache_ram_mib）；已复制到内存：%3</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="162"/>
        <source>Buffered reads</source>
        <translation>缓冲读取</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="162"/>
        <source>fallback_count: reads without O_DIRECT</source>
        <translation>fallback_count:未使用 O_DIRECT 的读取</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="166"/>
        <source>I/O errors</source>
        <translation>I/O 错误</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="176"/>
        <source>Cache occupancy</source>
        <translation>缓存占用</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="188"/>
        <source>%1 of %2 MiB</source>
        <translation>%1 / %2 MiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="190"/>
        <source>experts resident (no cache)</source>
        <translation>专家常驻内存（无缓存）</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="208"/>
        <source>Cache hit rate</source>
        <translation>缓存命中率</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="221"/>
        <source>token</source>
        <translation>词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="226"/>
        <source>per token</source>
        <translation>每词元</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="234"/>
        <source>cumulative</source>
        <translation>累计</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="246"/>
        <source>SSD reads per token (KiB)</source>
        <translation>每词元 SSD 读取量 (KiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="259"/>
        <source>Evictions per token</source>
        <translation>每词元驱逐数</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="281"/>
        <source>Experts in the cache (rows: MoE layers, columns: experts)</source>
        <translation>缓存中的专家(行:MoE 层,列:专家)</translation>
    </message>
    <message>
        <location filename="../ui/qml/DashboardPage.qml" line="317"/>
        <source>All experts are resident (no expert cache on this path)</source>
        <translation>所有专家常驻(此路径无专家缓存)</translation>
    </message>
</context>
<context>
    <name>FirstRunPanel</name>
    <message>
        <source>Planning the Expert Pack</source>
        <translation type="vanished">正在规划专家包</translation>
    </message>
    <message>
        <source>Checking free space and direct I/O</source>
        <translation type="vanished">正在检查可用空间和直接 I/O</translation>
    </message>
    <message>
        <source>Writing the dense weights</source>
        <translation type="vanished">正在写入稠密权重</translation>
    </message>
    <message>
        <source>Writing the experts</source>
        <translation type="vanished">正在写入专家</translation>
    </message>
    <message>
        <source>Finalising the pack</source>
        <translation type="vanished">正在完成专家包</translation>
    </message>
    <message>
        <source>Verifying the pack</source>
        <translation type="vanished">正在校验专家包</translation>
    </message>
    <message>
        <source>Pack ready</source>
        <translation type="vanished">专家包已就绪</translation>
    </message>
    <message>
        <source>Opening the model</source>
        <translation type="vanished">正在打开模型</translation>
    </message>
    <message>
        <source>Preparing</source>
        <translation type="vanished">正在准备</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="34"/>
        <source>A benchmark is using the model</source>
        <translation>基准测试正在使用模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="35"/>
        <source>The GPU stopped working</source>
        <translation>GPU 已停止工作</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="36"/>
        <source>The model could not be loaded</source>
        <translation>无法加载模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="37"/>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="38"/>
        <source>Getting the model ready</source>
        <translation>正在准备模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="47"/>
        <source>%1 is being benchmarked. The chat goes on when the benchmark has finished.</source>
        <translation>正在对 %1 进行基准测试。基准测试结束后即可继续聊天。</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="82"/>
        <source>Stop converting</source>
        <translation>停止转换</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="98"/>
        <source>Reload</source>
        <translation>重新加载</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="98"/>
        <source>Load again</source>
        <translation>重新加载</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="104"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="114"/>
        <source>The GPU cannot be used again until MoePack restarts. Your conversations are saved; the restarted app opens this one.</source>
        <translation>在 MoePack 重启之前无法再使用 GPU。你的对话已保存；重启后的应用会打开此对话。</translation>
    </message>
    <message>
        <location filename="../ui/qml/FirstRunPanel.qml" line="121"/>
        <source>Restart MoePack</source>
        <translation>重启 MoePack</translation>
    </message>
</context>
<context>
    <name>LibraryPage</name>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="40"/>
        <source>Converting %1 to an Expert Pack in %2</source>
        <translation>正在将 %1 转换为专家包，保存到 %2</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="67"/>
        <source>Add a model</source>
        <translation>添加模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="68"/>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="68"/>
        <source>Expert Pack manifests (manifest.json)</source>
        <translation>专家包清单 (manifest.json)</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="74"/>
        <source>Scan a folder for models</source>
        <translation>扫描文件夹中的模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="82"/>
        <source>Remove %1?</source>
        <translation>移除 %1？</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="90"/>
        <source>Remove and delete files</source>
        <translation>移除并删除文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="90"/>
        <source>Remove from the library</source>
        <translation>从模型库中移除</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="102"/>
        <source>Also delete its files from disk</source>
        <translation>同时从磁盘删除其文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="109"/>
        <source>%1 will be freed.</source>
        <translation>将释放 %1。</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="110"/>
        <source>The files stay on disk; no space is freed.</source>
        <translation>文件保留在磁盘上，不释放空间。</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="120"/>
        <source>Convert to an Expert Pack</source>
        <translation>转换为专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="131"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="162"/>
        <source>Cancel the download of %1?</source>
        <translation>取消下载 %1？</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="169"/>
        <source>What was downloaded of it (and of the other files of its group) is deleted. Pause keeps it instead.</source>
        <translation>已下载的部分（以及同组其他文件已下载的部分）将被删除。若想保留，请改用“暂停”。</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="173"/>
        <source>Keep it</source>
        <translation>保留</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="178"/>
        <source>Cancel and delete</source>
        <translation>取消并删除</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="188"/>
        <source>Stop the conversion?</source>
        <translation>停止转换？</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="195"/>
        <source>What is written so far stays on disk; converting the same model again goes on from there.</source>
        <translation>已写入的内容保留在磁盘上；再次转换同一模型时会从该处继续。</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="199"/>
        <source>Keep converting</source>
        <translation>继续转换</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="204"/>
        <source>Stop and close</source>
        <translation>停止并关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="216"/>
        <source>Converting a finished download</source>
        <translation>正在转换已完成的下载</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="244"/>
        <source>Add file…</source>
        <translation>添加文件…</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="245"/>
        <source>Scan folder…</source>
        <translation>扫描文件夹…</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="250"/>
        <source>Ollama model, e.g. qwen3:30b</source>
        <translation>Ollama 模型，例如 qwen3:30b</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="254"/>
        <source>Add Ollama model</source>
        <translation>添加 Ollama 模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="258"/>
        <source>Refresh</source>
        <translation>刷新</translation>
    </message>
    <message>
        <source>Memory (GiB)</source>
        <translation type="vanished">内存 (GiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="272"/>
        <source>Memory for the model: dense weights, the expert cache and the context</source>
        <translation>模型可用的内存：稠密权重、专家缓存和上下文</translation>
    </message>
    <message>
        <source>Expert cache (GiB)</source>
        <translation type="vanished">专家缓存 (GiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="265"/>
        <source>Plan the context for: memory (GiB)</source>
        <translation>规划上下文:内存(GiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="274"/>
        <source>expert cache (MiB)</source>
        <translation>专家缓存(MiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="281"/>
        <source>Starts at the Settings&apos; cache budget; a change here only plans</source>
        <translation>初始值为设置中的缓存预算;此处修改仅用于规划</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/LibraryPage.qml" line="325"/>
        <source>… and %n more (in the log)</source>
        <translation>
            <numerusform>……还有 %n 条（见日志）</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="333"/>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="362"/>
        <source>No models yet. Drop GGUF files or pack folders here, or scan a folder.</source>
        <translation>还没有模型。将 GGUF 文件或专家包文件夹拖放到这里，或扫描一个文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="404"/>
        <source>%1 (deleted)</source>
        <translation>%1（已删除）</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="412"/>
        <source>%1 · %2 · %3 · %4 experts, top-%5 · %6</source>
        <translation>%1 · %2 · %3 · %4 个专家，top-%5 · %6</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="422"/>
        <source>KV cache %1 per token + %2 per sequence · %3 tokens of context next to a %4 expert cache in %5</source>
        <translation>KV 缓存每词元 %1 + 每序列 %2 · 在 %5 内存中配合 %4 专家缓存可容纳 %3 个词元的上下文</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="429"/>
        <source>(memory - expert cache - dense weights - fixed state) / bytes per token, at most the trained context. %1</source>
        <translation>（内存 - 专家缓存 - 稠密权重 - 固定状态）/ 每词元字节数，不超过训练上下文长度。%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="435"/>
        <source>pack ready</source>
        <translation>专家包就绪</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="436"/>
        <source>pack building</source>
        <translation>专家包构建中</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="437"/>
        <source>pack failed verify</source>
        <translation>专家包校验失败</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="438"/>
        <source>no pack</source>
        <translation>无专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="446"/>
        <source>Load</source>
        <translation>加载</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="450"/>
        <source>Load %1 and chat with it</source>
        <translation>加载 %1 并与之对话</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="454"/>
        <source>Convert…</source>
        <translation>转换…</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="462"/>
        <source>Remove…</source>
        <translation>移除…</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="475"/>
        <source>Downloads</source>
        <translation>下载</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="490"/>
        <source>https:// URL or owner/repo</source>
        <translation>https:// 网址或 owner/repo</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="495"/>
        <source>file or shard pattern, e.g. *Q2_K*.gguf</source>
        <translation>文件或分片模式，例如 *Q2_K*.gguf</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="508"/>
        <source>SHA-256 (optional)</source>
        <translation>SHA-256（可选）</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="512"/>
        <source>Convert when done</source>
        <translation>完成后转换</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="514"/>
        <source>Build an Expert Pack once verified; the space check counts the pack too</source>
        <translation>校验通过后构建专家包；空间检查也会计入专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="518"/>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="524"/>
        <source>Hub</source>
        <translation>模型仓库站点</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/LibraryPage.qml" line="535"/>
        <source>%n download(s)</source>
        <translation>
            <numerusform>%n 个下载</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="540"/>
        <source>Clear finished</source>
        <translation>清除已结束的</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="573"/>
        <source>%1 (file %2 of %3)</source>
        <translation>%1（第 %2 个文件，共 %3 个）</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="595"/>
        <source>checking %1 of %2 already downloaded</source>
        <translation>正在校验已下载的 %2 中的 %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="597"/>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="598"/>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="599"/>
        <source>done · %1</source>
        <translation>完成 · %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="601"/>
        <source>paused · %1 of %2</source>
        <translation>已暂停 · %1 / %2</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="603"/>
        <source>paused · %1</source>
        <translation>已暂停 · %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="604"/>
        <source>asking the server</source>
        <translation>正在询问服务器</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="605"/>
        <source>retrying soon: %1</source>
        <translation>即将重试：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="606"/>
        <source>retrying soon</source>
        <translation>即将重试</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="607"/>
        <source>verifying</source>
        <translation>正在校验</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="609"/>
        <source>%1 of %2 · %3/s · %4</source>
        <translation>%1 / %2 · %3/s · %4</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="612"/>
        <source>%1 s left</source>
        <translation>剩余 %1 秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="618"/>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="618"/>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <location filename="../ui/qml/LibraryPage.qml" line="94"/>
        <location filename="../ui/qml/LibraryPage.qml" line="624"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
</context>
<context>
    <name>Main</name>
    <message>
        <location filename="../ui/qml/Main.qml" line="15"/>
        <source>MoePack Studio — %1</source>
        <translation>MoePack Studio — %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="16"/>
        <source>MoePack Studio</source>
        <translation>MoePack Studio</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="97"/>
        <source>Loading “%1” unloads the model writing it.</source>
        <translation>加载“%1”会卸载正在生成回复的模型。</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="97"/>
        <source>Load</source>
        <translation>加载</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="139"/>
        <source>Chat</source>
        <translation>聊天</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="140"/>
        <source>Dashboard</source>
        <translation>仪表盘</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="141"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="142"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="143"/>
        <source>Library</source>
        <translation>模型库</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="144"/>
        <source>Benchmarks</source>
        <translation>基准测试</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="201"/>
        <source>Benchmark</source>
        <translation>基准测试</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="203"/>
        <source>Loading</source>
        <translation>加载中</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="204"/>
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="204"/>
        <source>No model</source>
        <translation>无模型</translation>
    </message>
</context>
<context>
    <name>MessageBubble</name>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="68"/>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="68"/>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="100"/>
        <source>The reply failed: %1</source>
        <translation>回复失败：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="126"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="131"/>
        <source>Save and re-run</source>
        <translation>保存并重新生成</translation>
    </message>
    <message>
        <source>%1 prompt tokens · %2 tokens · first token %3 ms · prefill %4 tok/s · decode %5 tok/s</source>
        <translation type="vanished">提示 %1 词元 · 生成 %2 词元 · 首词元 %3 毫秒 · 预填充 %4 词元/秒 · 解码 %5 词元/秒</translation>
    </message>
    <message>
        <source>%1 prompt tokens · %2 tokens · first token %3 ms · prefill %4 tok/s</source>
        <translation type="vanished">%1 个提示词元 · %2 个词元 · 首词元 %3 ms · 预填充 %4 词元/秒</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/MessageBubble.qml" line="161"/>
        <source>%n prompt token(s)</source>
        <translation>
            <numerusform>%n 个提示词元</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/qml/MessageBubble.qml" line="162"/>
        <source> · %n token(s)</source>
        <translation>
            <numerusform> · %n 个词元</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="163"/>
        <source> · first token %1 ms · prefill %2 tok/s</source>
        <translation> · 首词元 %1 ms · 预填充 %2 词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="165"/>
        <source> · decode %1 tok/s</source>
        <translation> · 解码 %1 词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="166"/>
        <source> · stopped</source>
        <translation> · 已停止</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="167"/>
        <source> · length limit</source>
        <translation> · 达到长度上限</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="168"/>
        <source> · context full: start a new chat or raise the context length in Settings</source>
        <translation> · 上下文已满:请新建对话,或在设置中增大上下文长度</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="188"/>
        <source>generating…</source>
        <translation>生成中…</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="199"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="199"/>
        <source>Copied</source>
        <translation>已复制</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="217"/>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <location filename="../ui/qml/MessageBubble.qml" line="232"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
</context>
<context>
    <name>ModelInspector</name>
    <message numerus="yes">
        <source>%1 (%2), %n tokens</source>
        <translation type="vanished">
            <numerusform>%1（%2），%n 个词元</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelPage</name>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="25"/>
        <source>Cannot open the model:
%1</source>
        <translation>无法打开模型：
%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="46"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="54"/>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="55"/>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="61"/>
        <source>Expert Pack: %1</source>
        <translation>专家包：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="61"/>
        <source>GGUF: %1</source>
        <translation>GGUF：%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="66"/>
        <source>Size on disk</source>
        <translation>磁盘占用</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="67"/>
        <source>Tensors</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="68"/>
        <source>Tokenizer</source>
        <translation>分词器</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="69"/>
        <source>Routed experts</source>
        <translation>路由专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="71"/>
        <source>%1 per layer, top-%2, %3 shared</source>
        <translation>每层 %1 个，top-%2，%3 个共享</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="74"/>
        <source>All routed experts</source>
        <translation>全部路由专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="79"/>
        <source>Hyperparameters</source>
        <translation>超参数</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="105"/>
        <source>One routed expert per block (KiB)</source>
        <translation>每个块中单个路由专家的大小（KiB）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="133"/>
        <source>expert KiB</source>
        <translation>专家 KiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="139"/>
        <source>Layers with routed experts</source>
        <translation>含路由专家的层</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="155"/>
        <source>blk.%1 — %2 experts × %3 KiB</source>
        <translation>blk.%1 — %2 个专家 × %3 KiB</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <location filename="../ui/downloader.cpp" line="57"/>
        <source>empty file name</source>
        <translation>文件名为空</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="59"/>
        <source>&apos;%1&apos; is not a file name</source>
        <translation>“%1”不是文件名</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="60"/>
        <source>&apos;%1&apos; starts with a dot</source>
        <translation>“%1”以点开头</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="61"/>
        <source>file name longer than 255 characters</source>
        <translation>文件名超过 255 个字符</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="64"/>
        <source>&apos;%1&apos; contains a path separator or control character</source>
        <translation>“%1”包含路径分隔符或控制字符</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="68"/>
        <source>&apos;%1&apos; ends in %2, which MoePack uses for its own files</source>
        <translation>“%1”以 %2 结尾，MoePack 自己的文件使用该后缀</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="80"/>
        <location filename="../ui/downloader.cpp" line="83"/>
        <source>&apos;%1&apos; is not owner/repository</source>
        <translation>“%1”不是 owner/repository 格式</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="88"/>
        <source>&apos;%1&apos; is not a file path inside the repository</source>
        <translation>“%1”不是仓库内的文件路径</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="92"/>
        <source>the hub address %1 is not an https:// URL</source>
        <translation>仓库站点地址 %1 不是 https:// 网址</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="264"/>
        <source>Out of memory while benchmarking.</source>
        <translation>基准测试时内存不足。</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="74"/>
        <source>the hub&apos;s model info is not a JSON object (offset %1: %2)</source>
        <translation>仓库站点返回的模型信息不是 JSON 对象（偏移 %1：%2）</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="78"/>
        <source>the hub&apos;s model info has no &quot;siblings&quot; array</source>
        <translation>仓库站点返回的模型信息没有 &quot;siblings&quot; 数组</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="81"/>
        <source>the hub&apos;s tree listing is not a JSON array (offset %1: %2)</source>
        <translation>仓库站点返回的文件树不是 JSON 数组（偏移 %1：%2）</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="91"/>
        <source>tree entry %1 has no &quot;path&quot;</source>
        <translation>文件树条目 %1 没有 &quot;path&quot;</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="94"/>
        <source>tree entry %1 (%2): &quot;size&quot; is not a non-negative number</source>
        <translation>文件树条目 %1（%2）：&quot;size&quot; 不是非负数</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="100"/>
        <source>tree entry %1 (%2): &quot;lfs.oid&quot; is not 64 hex digits</source>
        <translation>文件树条目 %1（%2）：&quot;lfs.oid&quot; 不是 64 位十六进制数</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="109"/>
        <source>siblings[%1] has no &quot;rfilename&quot;</source>
        <translation>siblings[%1] 没有 &quot;rfilename&quot;</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="123"/>
        <source>no file name or pattern given</source>
        <translation>未提供文件名或模式</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="131"/>
        <source>refused &apos;%1&apos; from the hub listing: it would leave the models folder</source>
        <translation>拒绝仓库列表中的“%1”：它会离开模型文件夹</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="136"/>
        <source>refused &apos;%1&apos; from the hub listing: %2</source>
        <translation>拒绝仓库列表中的“%1”：%2</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="138"/>
        <source>&apos;%1&apos; matches two files named %2; use a narrower pattern</source>
        <translation>“%1”匹配到两个名为 %2 的文件；请使用更精确的模式</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="142"/>
        <source>no file in the repository matches &apos;%1&apos;</source>
        <translation>仓库中没有文件匹配“%1”</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="225"/>
        <source>Per-token timeline: forward ms per token (line, left axis), SSD KB read per token (bars, right axis)</source>
        <translation>逐词元时间线：每词元前向耗时 ms（折线，左轴），每词元 SSD 读取 KB（柱形，右轴）</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="229"/>
        <source>No per-token data in this report.</source>
        <translation>此报告中没有逐词元数据。</translation>
    </message>
    <message>
        <source>%1 tokens; x: token in the run, requests one after another (dashed: request start).</source>
        <translation type="vanished">共 %1 个词元；x 轴：本次运行中的词元，各请求依次排列（虚线：请求开始）。</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/pdf_report.cpp" line="278"/>
        <source>%n token(s); x: token in the run, requests one after another (dashed: request start).</source>
        <translation>
            <numerusform>共 %n 个词元；x 轴：本次运行中的词元，各请求依次排列（虚线：请求开始）。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="343"/>
        <location filename="../ui/pdf_report.cpp" line="351"/>
        <source>MoePack benchmark report</source>
        <translation>MoePack 基准测试报告</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="356"/>
        <source>Machine</source>
        <translation>机器</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="359"/>
        <source>driver</source>
        <translation>驱动</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="361"/>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="362"/>
        <source>logical cores</source>
        <translation>个逻辑核心</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="363"/>
        <source>RAM</source>
        <translation>内存</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="364"/>
        <source>GPU</source>
        <translation>GPU</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="364"/>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="365"/>
        <source>OS</source>
        <translation>操作系统</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="365"/>
        <source>kernel</source>
        <translation>内核</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="367"/>
        <source>Storage</source>
        <translation>存储</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="370"/>
        <source>Model and pack identity</source>
        <translation>模型与专家包标识</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="371"/>
        <source>Path</source>
        <translation>路径</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="372"/>
        <source>Format</source>
        <translation>格式</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="373"/>
        <source>layers</source>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="374"/>
        <source>experts, top-</source>
        <translation>个专家，top-</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="376"/>
        <source>Identity</source>
        <translation>标识</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="377"/>
        <source>MoePack</source>
        <translation>MoePack</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="381"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="382"/>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="382"/>
        <source>mode %1, temperature 0, %2 completion tokens per request, ignore_eos %3, fresh KV cache per request, expert cache kept between requests</source>
        <translation>模式 %1，温度 0，每个请求生成 %2 个词元，ignore_eos %3，每个请求使用全新的 KV 缓存，请求之间保留专家缓存</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="385"/>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="386"/>
        <source>expert cache slots of</source>
        <translation>个专家缓存槽，每个</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="388"/>
        <source>Not on the GPU</source>
        <translation>未在 GPU 上运行</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="390"/>
        <source>Host-RAM tier</source>
        <translation>内存层</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="390"/>
        <source>slots (cache_ram_mib)</source>
        <translation>个槽位（cache_ram_mib）</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="396"/>
        <source>Engine settings</source>
        <translation>引擎设置</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="397"/>
        <source>Prompt set</source>
        <translation>提示词集</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="399"/>
        <source>requests</source>
        <translation>个请求</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="402"/>
        <source>Requests</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="412"/>
        <source>error: %1</source>
        <translation>错误：%1</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>request</source>
        <translation>请求</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>data set</source>
        <translation>数据集</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>system</source>
        <translation>系统</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="420"/>
        <source>prompt</source>
        <translation>提示词元</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <source>completion</source>
        <translation>生成词元</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <source>TTFT ms</source>
        <translation>TTFT ms</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>prefill tok/s</source>
        <translation>预填充词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="421"/>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>decode tok/s</source>
        <translation>解码词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="422"/>
        <location filename="../ui/pdf_report.cpp" line="446"/>
        <source>hit rate</source>
        <translation>命中率</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="422"/>
        <source>SSD/token</source>
        <translation>SSD/词元</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="426"/>
        <source>Aggregates per data set, published figures beside ours</source>
        <translation>按数据集汇总：已发布数据与本次结果对照</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="439"/>
        <location filename="../ui/pdf_report.cpp" line="478"/>
        <source>published: %1</source>
        <translation>已发布：%1</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>group</source>
        <translation>分组</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="445"/>
        <source>source</source>
        <translation>来源</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="446"/>
        <source>SSD GB/token</source>
        <translation>SSD GB/词元</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="446"/>
        <source>TTFT mean ms</source>
        <translation>TTFT 平均 ms</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="448"/>
        <source>Aggregates are ratios of sums over successful requests. Published figures come from the prompt set (other models and machines): context, not a like-for-like comparison.</source>
        <translation>汇总值为所有成功请求的各项总和之比。已发布数据来自提示词集（其他模型和机器）：仅供参考，并非同等条件下的对比。</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="454"/>
        <source>Charts</source>
        <translation>图表</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="496"/>
        <source>Decode tokens/s per request</source>
        <translation>每个请求的解码速度</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="496"/>
        <source>tokens/s</source>
        <translation>词元/秒</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="499"/>
        <source>Expert cache hit rate per request</source>
        <translation>每个请求的专家缓存命中率</translation>
    </message>
    <message>
        <location filename="../ui/pdf_report.cpp" line="499"/>
        <source>unique (layer, expert) keys per step</source>
        <translation>按每步唯一的（层，专家）键统计</translation>
    </message>
    <message>
        <location filename="../ui/model_library.cpp" line="480"/>
        <source>the files of Ollama model %1 are shared blobs of Ollama&apos;s store; remove it with `ollama rm %1`</source>
        <translation>Ollama 模型 %1 的文件是 Ollama 存储中共享的数据块；请用 `ollama rm %1` 删除它</translation>
    </message>
    <message>
        <location filename="../ui/model_library.cpp" line="507"/>
        <source>%1 is outside MoePack&apos;s folders (%2); MoePack only deletes files there</source>
        <translation>%1 不在 MoePack 的文件夹（%2）中；MoePack 只删除这些文件夹中的文件</translation>
    </message>
</context>
<context>
    <name>ReplyStopGuard</name>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="43"/>
        <source>Quitting closes the studio.</source>
        <translation>退出会关闭 Studio。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="43"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="60"/>
        <source>Stop the reply being written?</source>
        <translation>停止正在生成的回复？</translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="84"/>
        <source>%1 The reply being written in “%2” stops there; what it has written so far is kept.</source>
        <translation>%1“%2”中正在生成的回复将就此停止；已生成的内容会保留。</translation>
    </message>
    <message>
        <location filename="../ui/qml/ReplyStopGuard.qml" line="98"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
</context>
<context>
    <name>SettingsPage</name>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="134"/>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="140"/>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="141"/>
        <source>Backend</source>
        <translation>后端</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="144"/>
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="145"/>
        <source>0 = automatic (%1: all cores but one, for the UI)</source>
        <translation>0 = 自动（%1：保留一个核心给界面）</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="150"/>
        <source>Context length (tokens)</source>
        <translation>上下文长度（词元）</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="153"/>
        <source>The loaded model runs with %1: its trained context.</source>
        <translation>已加载的模型以 %1 运行:即其训练上下文长度。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="159"/>
        <source>Expert cache and SSD reads</source>
        <translation>专家缓存与 SSD 读取</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="162"/>
        <source>Cache budget (MiB)</source>
        <translation>缓存预算 (MiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="163"/>
        <source>cache_vram_mib: VRAM on CUDA, host RAM on the CPU backend</source>
        <translation>cache_vram_mib：CUDA 上为显存，CPU 后端为内存</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="165"/>
        <source>Keep free (MiB)</source>
        <translation>保留空闲 (MiB)</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="168"/>
        <source>Which expert the cache evicts</source>
        <translation>缓存淘汰哪个专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="174"/>
        <source>Host-RAM tier (MiB)</source>
        <translation>内存层 (MiB)</translation>
    </message>
    <message>
        <source>cache_ram_mib: experts the VRAM cache evicts wait here instead of on the SSD (CUDA; 0: off)</source>
        <translation type="vanished">cache_ram_mib：显存缓存淘汰的专家暂存在内存中，而不必再从 SSD 读取（CUDA；0 表示关闭）</translation>
    </message>
    <message>
        <source>cache_ram_mib: experts the VRAM cache evicts wait here instead of on the SSD (CUDA). auto: half the free RAM, now %1 MiB; 0: off</source>
        <translation type="vanished">cache_ram_mib：显存缓存淘汰的专家暂存在内存中，而不必再从 SSD 读取（CUDA）。auto：空闲内存的一半，当前为 %1 MiB；0 表示关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="175"/>
        <source>cache_ram_mib: experts the VRAM cache evicts wait here instead of on the SSD (CUDA). auto: half the free RAM, keeping 2 GiB free, now %1 MiB; 0: off</source>
        <translation>cache_ram_mib：显存缓存淘汰的专家暂存在内存中，而不必再从 SSD 读取（CUDA）。auto：空闲内存的一半，并保留 2 GiB 空闲，当前为 %1 MiB；0 表示关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="180"/>
        <source>Which evictions the RAM tier keeps</source>
        <translation>内存层保留哪些被淘汰的专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="169"/>
        <source>cache_policy: hybrid: the least used, and of those the least recently used; lru: the least recently used; lfu: the least used</source>
        <translation>cache_policy：hybrid：使用次数最少的（次数相同时取最久未使用的）；lru：最久未使用的；lfu：使用次数最少的</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="181"/>
        <source>cache_ram_admission (CUDA): frequency: only experts used more often than the one they would push out (far fewer copies down); all: every one</source>
        <translation>cache_ram_admission（CUDA）：frequency：只保留比将被挤出的专家使用更频繁的专家（向下复制少得多）；all：全部保留</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="184"/>
        <source>Staging buffers</source>
        <translation>暂存缓冲区</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="185"/>
        <source>Reads per expert</source>
        <translation>每个专家的读取次数</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="191"/>
        <source>Direct I/O (O_DIRECT)</source>
        <translation>直接 I/O (O_DIRECT)</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="204"/>
        <source>Read the next layer&apos;s experts ahead</source>
        <translation>提前读取下一层的专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="217"/>
        <source>Check each expert&apos;s SHA-256 on its first read</source>
        <translation>首次读取每个专家时校验其 SHA-256</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="225"/>
        <source>A damaged Expert Pack stops the reply with an error naming the expert, instead of answering from wrong weights.</source>
        <translation>专家包损坏时，回复会停止并给出指明该专家的错误，而不会用错误的权重作答。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="242"/>
        <source>Load a model to see how many experts these values hold. Free memory: %1 MiB.</source>
        <translation>加载模型后可查看这些设置能容纳多少专家。可用内存：%1 MiB。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="244"/>
        <source>%1 MiB usable of %2 MiB free → %3 expert slots of %4 MiB.</source>
        <translation>可用 %1 MiB（空闲 %2 MiB）→ %3 个专家槽，每个 %4 MiB。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="255"/>
        <source>Defaults for new conversations</source>
        <translation>新对话的默认值</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="256"/>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="256"/>
        <source>0 = greedy (reproducible)</source>
        <translation>0 = 贪心（可复现）</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="257"/>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="258"/>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="258"/>
        <source>0 = off</source>
        <translation>0 = 关闭</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="259"/>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="260"/>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="261"/>
        <source>Max tokens per reply</source>
        <translation>每次回复的最大词元数</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="262"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="262"/>
        <source>-1 = random</source>
        <translation>-1 = 随机</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="263"/>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="267"/>
        <source>Models and language</source>
        <translation>模型与语言</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="268"/>
        <source>Expert Pack folder</source>
        <translation>专家包文件夹</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="273"/>
        <source>Convert GGUF models to Expert Packs when opened</source>
        <translation>打开 GGUF 模型时转换为专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="284"/>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="290"/>
        <source>System</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="325"/>
        <source>Fix the highlighted values first.</source>
        <translation>请先修正标出的值。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="327"/>
        <source>The loaded model would not start with these cache values (see the preview); change them to apply.</source>
        <translation>已加载的模型无法以这些缓存值启动（见上方预览）；请修改后再应用。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="356"/>
        <source>Applying these settings reloads the model.</source>
        <translation>应用这些设置会重新加载模型。</translation>
    </message>
    <message>
        <source>The loaded model would not start with these cache values; raise the budget to apply.</source>
        <translation type="vanished">已加载的模型无法以这些缓存值启动；请提高预算后再应用。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="328"/>
        <source>Changes are not applied yet.</source>
        <translation>更改尚未应用。</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="331"/>
        <source>Reset to defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="337"/>
        <source>Revert</source>
        <translation>还原</translation>
    </message>
    <message>
        <location filename="../ui/qml/SettingsPage.qml" line="346"/>
        <location filename="../ui/qml/SettingsPage.qml" line="356"/>
        <source>Apply</source>
        <translation>应用</translation>
    </message>
</context>
<context>
    <name>buildphases</name>
    <message>
        <location filename="../ui/qml/buildphases.js" line="6"/>
        <source>Planning the Expert Pack</source>
        <translation>正在规划专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="7"/>
        <source>Checking free space and direct I/O</source>
        <translation>正在检查可用空间和直接 I/O</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="8"/>
        <source>Writing the dense weights</source>
        <translation>正在写入稠密权重</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="9"/>
        <source>Writing the experts</source>
        <translation>正在写入专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="10"/>
        <source>Finalising the pack</source>
        <translation>正在完成专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="11"/>
        <source>Verifying the pack</source>
        <translation>正在校验专家包</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="12"/>
        <source>Pack ready</source>
        <translation>专家包已就绪</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="13"/>
        <source>Opening the model</source>
        <translation>正在打开模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="14"/>
        <source>Waiting for the benchmark to finish: it has the memory until then</source>
        <translation>正在等待基准测试结束：在此之前内存由它占用</translation>
    </message>
    <message>
        <location filename="../ui/qml/buildphases.js" line="19"/>
        <source>Preparing</source>
        <translation>正在准备</translation>
    </message>
</context>
<context>
    <name>moepack::ui</name>
    <message>
        <source>cannot create the folder %1</source>
        <translation type="vanished">无法创建文件夹 %1</translation>
    </message>
    <message>
        <source>MoePack Studio is already running (process %1 on %2); close it first, or switch to its window</source>
        <translation type="vanished">MoePack Studio 已在运行（%2 上的进程 %1）；请先关闭它，或切换到它的窗口</translation>
    </message>
    <message>
        <source>cannot write the lock file %1</source>
        <translation type="vanished">无法写入锁文件 %1</translation>
    </message>
</context>
<context>
    <name>moepack::ui::BenchViewModel</name>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="139"/>
        <source>Choose a model to benchmark.</source>
        <translation>请选择要进行基准测试的模型。</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="144"/>
        <source>Choose a prompt set.</source>
        <translation>请选择提示词集。</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="148"/>
        <source>The chat engine is busy; wait for it (or stop the reply) before benchmarking.</source>
        <translation>聊天引擎正忙；请等待其完成（或停止回复）后再进行基准测试。</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="178"/>
        <source>Unloading the chat model</source>
        <translation>正在卸载聊天模型</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="193"/>
        <location filename="../ui/bench_view_model.cpp" line="363"/>
        <source>Cancelled.</source>
        <translation>已取消。</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="196"/>
        <source>Loading %1</source>
        <translation>正在加载 %1</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="292"/>
        <source>Model loaded</source>
        <translation>模型已加载</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="304"/>
        <source>%1: request %2 of %3</source>
        <translation>%1：请求 %2 / %3</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="325"/>
        <source>%1: request %2 of %3 done</source>
        <translation>%1：请求 %2 / %3 已完成</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="361"/>
        <source>Finished in %1 s</source>
        <translation>已完成，用时 %1 秒</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="364"/>
        <source>Cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="364"/>
        <source>Failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="378"/>
        <source>Cancelling</source>
        <translation>正在取消</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="402"/>
        <source>published: %1</source>
        <translation>已发布：%1</translation>
    </message>
    <message>
        <location filename="../ui/bench_view_model.cpp" line="423"/>
        <source>Run a benchmark first.</source>
        <translation>请先运行基准测试。</translation>
    </message>
</context>
<context>
    <name>moepack::ui::ChatViewModel</name>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="59"/>
        <source>Cannot open the conversation database: %1</source>
        <translation>无法打开对话数据库：%1</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="345"/>
        <source>New chat</source>
        <translation>新聊天</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="394"/>
        <source>The model is not ready.</source>
        <translation>模型尚未就绪。</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="467"/>
        <source>There is no conversation to export.</source>
        <translation>没有可导出的对话。</translation>
    </message>
    <message>
        <location filename="../ui/chat_view_model.cpp" line="545"/>
        <source>The reply in “%1” failed: %2</source>
        <translation>“%1”中的回复失败：%2</translation>
    </message>
</context>
<context>
    <name>moepack::ui::ConvertWizard</name>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="146"/>
        <source>Not enough space in %1: the pack needs %2 bytes, %3 bytes are free</source>
        <translation>%1 空间不足：专家包需要 %2 字节，可用 %3 字节</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="151"/>
        <source>. The shard-by-shard mode fits: it needs %1 bytes, because it deletes each source shard as soon as its bytes are in the pack and verified (the source is gone afterwards).</source>
        <translation>。逐分片模式空间足够：它只需要 %1 字节，因为每个源分片的数据写入专家包并通过校验后会立即删除（转换完成后源文件将不复存在）。</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="155"/>
        <source>; even the shard-by-shard mode needs %1 bytes</source>
        <translation>；即使使用逐分片模式也需要 %1 字节</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="169"/>
        <source>Shard-by-shard mode: needs %1 bytes of the %2 free; each source shard is deleted once its bytes are in the pack and verified.</source>
        <translation>逐分片模式：需要 %1 字节（可用 %2 字节）；每个源分片的数据写入专家包并通过校验后即被删除。</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="253"/>
        <source>Verification cancelled. The pack is built but not verified; convert again to verify it (nothing is rebuilt).</source>
        <translation>校验已取消。专家包已构建但尚未校验；再次转换即可校验（不会重新构建）。</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="258"/>
        <source>Cancelled. Nothing was finalised; start again to resume.</source>
        <translation>已取消。专家包尚未完成；重新开始即可从中断处继续。</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="270"/>
        <source>The folder already held this model&apos;s finished pack: nothing was rebuilt.</source>
        <translation>该文件夹中已有此模型完成的专家包：未重新构建任何内容。</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="272"/>
        <source>Resumed from the last checkpoint of the interrupted conversion.</source>
        <translation>已从中断转换的上一个检查点继续。</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="329"/>
        <source>%1 is a blob of Ollama&apos;s store, which its models may share: remove the model with `ollama rm`</source>
        <translation>%1 是 Ollama 存储中的数据块，可能被其多个模型共用：请用 `ollama rm` 删除该模型</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="336"/>
        <source>cannot delete %1</source>
        <translation>无法删除 %1</translation>
    </message>
    <message>
        <location filename="../ui/convert_wizard.cpp" line="341"/>
        <source>Source deleted.</source>
        <translation>源文件已删除。</translation>
    </message>
</context>
<context>
    <name>moepack::ui::Downloader</name>
    <message>
        <location filename="../ui/downloader.cpp" line="131"/>
        <source>the partial file %1 could not be read back</source>
        <translation>无法读回部分下载的文件 %1</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="167"/>
        <source>refused file name %1: %2</source>
        <translation>拒绝文件名 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="242"/>
        <source>only https:// downloads are allowed: %1</source>
        <translation>只允许 https:// 下载：%1</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="254"/>
        <source>refused file name from %1: %2</source>
        <translation>拒绝来自 %1 的文件名：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="258"/>
        <source>cannot create the models folder %1</source>
        <translation>无法创建模型文件夹 %1</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="263"/>
        <source>refused file name %1: it leaves the models folder</source>
        <translation>拒绝文件名 %1：它会离开模型文件夹</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="268"/>
        <source>%1 already exists; remove it first</source>
        <translation>%1 已存在；请先将其移除</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="272"/>
        <source>the expected SHA-256 &apos;%1&apos; is not 64 hex digits</source>
        <translation>预期的 SHA-256“%1”不是 64 位十六进制数</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="354"/>
        <location filename="../ui/downloader.cpp" line="587"/>
        <source>TLS verification failed for %1: %2</source>
        <translation>%1 的 TLS 验证失败：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="358"/>
        <location filename="../ui/downloader.cpp" line="591"/>
        <source>HTTP %1 for %2</source>
        <translation>%2 返回 HTTP %1</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="376"/>
        <source>%1: the server announces %2 bytes, the hub listing %3 bytes</source>
        <translation>%1：服务器声明 %2 字节，仓库列表为 %3 字节</translation>
    </message>
    <message>
        <source>not enough space in %1: %2 bytes needed, %3 bytes free</source>
        <translation type="vanished">%1 空间不足：需要 %2 字节，可用 %3 字节</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="441"/>
        <source>cannot open %1: %2</source>
        <translation>无法打开 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="445"/>
        <source>cannot truncate %1: %2</source>
        <translation>无法截断 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="480"/>
        <source>gave up on %1 after %2 restarts; last: %3</source>
        <translation>重新开始 %2 次后放弃 %1；最后一次原因：%3</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="503"/>
        <source>the server answered a different range or file (Content-Range &apos;%1&apos;, ETag &apos;%2&apos;)</source>
        <translation>服务器返回了不同的范围或文件（Content-Range“%1”，ETag“%2”）</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="530"/>
        <source>the file changed on the server between HEAD and GET</source>
        <translation>服务器上的文件在 HEAD 和 GET 之间发生了变化</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="545"/>
        <source>the server sent more than the announced %1 bytes</source>
        <translation>服务器发送的数据超过了声明的 %1 字节</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="549"/>
        <location filename="../ui/downloader.cpp" line="640"/>
        <source>cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="579"/>
        <source>the server refused the range from byte %1 (416)</source>
        <translation>服务器拒绝了从第 %1 字节开始的范围（416）</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="599"/>
        <source>the body ended at byte %1 of %2</source>
        <translation>响应内容在第 %1 字节（共 %2 字节）处结束</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/downloader.cpp" line="618"/>
        <source>download of %1 failed after %n attempt(s): %2</source>
        <translation>
            <numerusform>%1 的下载在尝试 %n 次后失败：%2</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="647"/>
        <source>%1 has %2 bytes, expected %3</source>
        <translation>%1 有 %2 字节，预期 %3 字节</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="658"/>
        <source>hub listing</source>
        <translation>仓库列表</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="660"/>
        <source>%1: SHA-256 mismatch (expected %2 from the %3, got %4); %5</source>
        <translation>%1：SHA-256 不匹配（来自%3的预期值为 %2，实际为 %4）；%5</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="684"/>
        <source>cannot install %1 as %2: %2 already exists and was not replaced; the verified download is kept as %1</source>
        <translation>无法将 %1 安装为 %2：%2 已存在且未被替换；已校验的下载文件保留为 %1</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="687"/>
        <source>cannot rename %1 to %2: %3</source>
        <translation>无法将 %1 重命名为 %2：%3</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="657"/>
        <source>user</source>
        <translation>用户</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="391"/>
        <source>not enough space in %1: %2 needed (%3 bytes), %4 free (%5 bytes)</source>
        <translation>%1 空间不足：需要 %2（%3 字节），可用 %4（%5 字节）</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="659"/>
        <source>server</source>
        <translation>服务器</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="662"/>
        <source>the file was kept aside as %1 and not installed</source>
        <translation>文件已另存为 %1，未安装</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="663"/>
        <source>the file was not installed</source>
        <translation>文件未安装</translation>
    </message>
    <message>
        <source>cannot rename %1 to %2</source>
        <translation type="vanished">无法将 %1 重命名为 %2</translation>
    </message>
    <message>
        <location filename="../ui/downloader.cpp" line="718"/>
        <source>cannot write the download state: %1</source>
        <translation>无法写入下载状态：%1</translation>
    </message>
</context>
<context>
    <name>moepack::ui::DownloadsViewModel</name>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="257"/>
        <source>no certificate in the CA bundle %1</source>
        <translation>CA 证书包 %1 中没有证书</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="272"/>
        <source>refused download %1: %2</source>
        <translation>拒绝下载 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="272"/>
        <source>not a valid URL</source>
        <translation>不是有效的网址</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="287"/>
        <source>refused download %1: only https:// addresses are downloaded (TLS, certificate checked)</source>
        <translation>已拒绝下载 %1：只下载 https:// 地址（TLS，校验证书）</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="320"/>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="324"/>
        <source>a SHA-256 can only be given for a single file; &apos;%1&apos; matches %2 files</source>
        <translation>只能为单个文件指定 SHA-256；“%1”匹配到 %2 个文件</translation>
    </message>
    <message>
        <source>not enough space in %1: %2 bytes needed, %3 bytes free%4</source>
        <translation type="vanished">%1 空间不足：需要 %2 字节，可用 %3 字节%4</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="383"/>
        <source>not enough space in %1: %2 needed (%3 bytes), %4 free (%5 bytes)</source>
        <translation>%1 空间不足：需要 %2（%3 字节），可用 %4（%5 字节）</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="388"/>
        <source> (the download and the Expert Pack built from it)</source>
        <translation>（下载的文件及由其构建的专家包）</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="390"/>
        <source>; the downloads already in the list will still take %1 of it</source>
        <translation>；列表中已有的下载还将占用其中的 %1</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="402"/>
        <source>%1 already exists; remove it first</source>
        <translation>%1 已存在；请先将其移除</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="410"/>
        <source>%1 is already in the download list</source>
        <translation>%1 已在下载列表中</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="434"/>
        <source>cannot record the download: %1</source>
        <translation>无法记录该下载：%1</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="549"/>
        <source>position %1 of the group</source>
        <translation>该组中的第 %1 项</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="559"/>
        <source>the download of %1 is incomplete (missing: %2); it was not added to the library</source>
        <translation>%1 的下载不完整（缺少：%2）；未添加到模型库</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="598"/>
        <source>the download list is already kept in %1</source>
        <translation>下载列表已保存在 %1 中</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="609"/>
        <source>the download list cannot be kept: %1</source>
        <translation>无法保存下载列表：%1</translation>
    </message>
    <message>
        <location filename="../ui/downloads_view_model.cpp" line="652"/>
        <source>convert %1: %2</source>
        <translation>转换 %1：%2</translation>
    </message>
</context>
<context>
    <name>moepack::ui::EngineController</name>
    <message>
        <location filename="../ui/engine_worker.cpp" line="481"/>
        <source>MoePack could not be restarted (%1). Close it and start it again.</source>
        <translation>无法重启 MoePack（%1）。请将其关闭后重新启动。</translation>
    </message>
</context>
<context>
    <name>moepack::ui::EngineWorker</name>
    <message>
        <location filename="../ui/engine_worker.cpp" line="216"/>
        <source>Out of memory while loading %1.</source>
        <translation>加载 %1 时内存不足。</translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="219"/>
        <source>The conversion of %1 was cancelled.</source>
        <translation>%1 的转换已取消。</translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="233"/>
        <source>No model is loaded.</source>
        <translation>未加载模型。</translation>
    </message>
    <message>
        <location filename="../ui/engine_worker.cpp" line="271"/>
        <source>Out of memory during generation.</source>
        <translation>生成时内存不足。</translation>
    </message>
</context>
<context>
    <name>moepack::ui::HubLister</name>
    <message>
        <location filename="../ui/library_hub.cpp" line="153"/>
        <source>TLS verification failed for %1: %2</source>
        <translation>%1 的 TLS 验证失败：%2</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="157"/>
        <source>the hub has no public repository %1 (HTTP %2 for %3)</source>
        <translation>仓库站点上没有公开仓库 %1（%3 返回 HTTP %2）</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="166"/>
        <source>could not reach %1: %2</source>
        <translation>无法连接 %1：%2</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="170"/>
        <source>listing %1 failed: HTTP %2 %3</source>
        <translation>列出 %1 失败：HTTP %2 %3</translation>
    </message>
    <message>
        <location filename="../ui/library_hub.cpp" line="199"/>
        <source>hub listing of %1: %2</source>
        <translation>%1 的仓库列表：%2</translation>
    </message>
</context>
<context>
    <name>moepack::ui::LibraryViewModel</name>
    <message numerus="yes">
        <location filename="../ui/library_view_model.cpp" line="140"/>
        <source>%n model(s) added</source>
        <translation>
            <numerusform>已添加 %n 个模型</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/library_view_model.cpp" line="167"/>
        <source>%n model(s) found in %1</source>
        <translation>
            <numerusform>在 %1 中找到 %n 个模型</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="174"/>
        <source>Ollama model %1 added</source>
        <translation>已添加 Ollama 模型 %1</translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="186"/>
        <source>Removed; %1 freed</source>
        <translation>已移除；释放了 %1</translation>
    </message>
    <message>
        <location filename="../ui/library_view_model.cpp" line="202"/>
        <source>unknown model</source>
        <translation>未知模型</translation>
    </message>
    <message>
        <source>Ollama&apos;s blobs are shared between its models; remove it with `ollama rm %1`</source>
        <translation type="vanished">Ollama 的数据块在其模型之间共享；请用 `ollama rm %1` 移除</translation>
    </message>
    <message>
        <source>%1 is outside the models folder %2; MoePack only deletes files there</source>
        <translation type="vanished">%1 不在模型文件夹 %2 中；MoePack 只删除该文件夹中的文件</translation>
    </message>
</context>
<context>
    <name>moepack::ui::ModelInspector</name>
    <message numerus="yes">
        <location filename="../ui/model_inspector.cpp" line="90"/>
        <source>%1 (%2), %n tokens</source>
        <translation>
            <numerusform>%1（%2），%n 个词元</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>moepack::ui::SettingsViewModel</name>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="163"/>
        <source>Choose auto, cpu or cuda.</source>
        <translation>请选择 auto、cpu 或 cuda。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="165"/>
        <source>Choose hybrid, lru or lfu.</source>
        <translation>请选择 hybrid、lru 或 lfu。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="167"/>
        <source>Choose frequency or all.</source>
        <translation>请选择 frequency 或 all。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="168"/>
        <source>Unknown language.</source>
        <translation>未知语言。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="171"/>
        <source>Choose a folder.</source>
        <translation>请选择文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="173"/>
        <source>Give the whole path (from /).</source>
        <translation>请填写完整路径（从 / 开始）。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="175"/>
        <location filename="../ui/settings_view_model.cpp" line="183"/>
        <source>%1 is a file, not a folder.</source>
        <translation>%1 是文件，不是文件夹。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="176"/>
        <source>MoePack cannot write in %1.</source>
        <translation>MoePack 无法在 %1 中写入。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="185"/>
        <source>MoePack cannot create a folder in %1.</source>
        <translation>MoePack 无法在 %1 中创建文件夹。</translation>
    </message>
    <message>
        <source>Enter auto or a number of MiB.</source>
        <translation type="vanished">请输入 auto 或以 MiB 为单位的数字。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="206"/>
        <source>Enter a number.</source>
        <translation>请输入数字。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="211"/>
        <source>Between %1 and %2.</source>
        <translation>应介于 %1 和 %2 之间。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="210"/>
        <source>Enter a whole number.</source>
        <translation>请输入整数。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="200"/>
        <source>Enter auto or a whole number of MiB.</source>
        <translation>请输入 auto 或以 MiB 为单位的整数。</translation>
    </message>
    <message>
        <location filename="../ui/settings_view_model.cpp" line="214"/>
        <location filename="../ui/settings_view_model.cpp" line="218"/>
        <source>Unknown setting %1.</source>
        <translation>未知设置 %1。</translation>
    </message>
    <message numerus="yes">
        <location filename="../ui/settings_view_model.cpp" line="344"/>
        <source>%n slot(s) cannot hold one layer&apos;s %1 selected experts; the engine would refuse to start.</source>
        <translation>
            <numerusform>%n 个槽放不下一层选中的 %1 个专家；引擎将无法启动。</numerusform>
        </translation>
    </message>
</context>
</TS>
