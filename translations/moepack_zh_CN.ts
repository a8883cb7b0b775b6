<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>Main</name>
    <message>
        <location filename="../ui/qml/Main.qml" line="11"/>
        <source>MoePack Studio — %1</source>
        <translation>MoePack Studio — %1</translation>
    </message>
    <message>
        <location filename="../ui/qml/Main.qml" line="12"/>
        <location filename="../ui/qml/Main.qml" line="28"/>
        <source>MoePack Studio</source>
        <translation>MoePack Studio</translation>
    </message>
</context>
<context>
    <name>ModelInspector</name>
    <message numerus="yes">
        <location filename="../ui/model_inspector.cpp" line="71"/>
        <source>%1 (%2), %n tokens</source>
        <translation>
            <numerusform>%1（%2），%n 个词元</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelPage</name>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="24"/>
        <source>Cannot open the model:
%1</source>
        <translation>无法打开模型：
%1</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="40"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="45"/>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="46"/>
        <source>Size on disk</source>
        <translation>磁盘占用</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="47"/>
        <source>Tensors</source>
        <translation>张量</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="48"/>
        <source>Tokenizer</source>
        <translation>分词器</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="49"/>
        <source>Routed experts</source>
        <translation>路由专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="51"/>
        <source>%1 per layer, top-%2, %3 shared</source>
        <translation>每层 %1 个，top-%2，%3 个共享</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="54"/>
        <source>All routed experts</source>
        <translation>全部路由专家</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="59"/>
        <source>Hyperparameters</source>
        <translation>超参数</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="85"/>
        <source>One routed expert per block (KiB)</source>
        <translation>每个块中单个路由专家的大小（KiB）</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="110"/>
        <source>expert KiB</source>
        <translation>专家 KiB</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="116"/>
        <source>Layers with routed experts</source>
        <translation>含路由专家的层</translation>
    </message>
    <message>
        <location filename="../ui/qml/ModelPage.qml" line="132"/>
        <source>blk.%1 — %2 experts × %3 KiB</source>
        <translation>blk.%1 — %2 个专家 × %3 KiB</translation>
    </message>
</context>
</TS>
