#!/usr/bin/env node
'use strict';
// Prints HF tokenizers' ids and decodes for sentencepiece_tiny.json in the pipelines of
// TokenizerSentencePiece.EveryPipelinePathEqualsHuggingFace (the table in tokenizer_test.cpp):
//   node test/models/tokenizers/check_sentencepiece_tiny.js build/tokenizer-refs/npm/node_modules
const hf=require(require('path').resolve(process.argv[2], 'tokenizers'));
const fs=require('fs');
(async()=>{
 const base=JSON.parse(fs.readFileSync(require('path').join(__dirname, 'sentencepiece_tiny.json'),'utf8'));
 const variants={llama:base};
 const g=JSON.parse(JSON.stringify(base)); g.normalizer={type:'Sequence',normalizers:[{type:'NFC'},{type:'Replace',pattern:{String:' '},content:'▁'}]};
 g.pre_tokenizer={type:'Split',pattern:{String:' '},behavior:'MergedWithPrevious',invert:false};
 g.decoder={type:'Sequence',decoders:[{type:'Replace',pattern:{String:'▁'},content:' '},{type:'ByteFallback'},{type:'Fuse'}]}; g.model.merges=g.model.merges.map((x)=>x.split(' ')); variants.gemma=g;
 const m=JSON.parse(JSON.stringify(base)); m.normalizer=null; m.pre_tokenizer={type:'Metaspace',replacement:'▁',prepend_scheme:'first',split:true};
 m.decoder={type:'Metaspace',replacement:'▁',prepend_scheme:'first',split:true}; variants.meta=m;
 const ma=JSON.parse(JSON.stringify(m)); ma.pre_tokenizer.prepend_scheme='always'; variants.metaAlways=ma;
 const s=JSON.parse(JSON.stringify(base)); s.normalizer={type:'Sequence',normalizers:[{type:'Strip',strip_left:true,strip_right:true},{type:'Replace',pattern:{String:' '},content:'▁'}]}; variants.strip=s;
 const nf=JSON.parse(JSON.stringify(base)); nf.model.byte_fallback=false; variants.nofb=nf;
 const nfu=JSON.parse(JSON.stringify(nf)); nfu.model.fuse_unk=false; variants.nofuse=nfu;
 // Gemma 1/2: Replace alone, no pre-tokenizer, no Strip decoder, merges as strings.
 const g2=JSON.parse(JSON.stringify(base)); g2.normalizer={type:'Replace',pattern:{String:' '},content:'▁'};
 g2.decoder={type:'Sequence',decoders:[{type:'Replace',pattern:{String:'▁'},content:' '},{type:'ByteFallback'},{type:'Fuse'}]}; variants.gemma2=g2;
 // transformers' legacy=false conversion: no normalizer, Metaspace(first, split false), Llama 2's decoder.
 const lf=JSON.parse(JSON.stringify(base)); lf.normalizer=null; lf.pre_tokenizer={type:'Metaspace',replacement:'▁',prepend_scheme:'first',split:false}; variants.legacyFalse=lf;
 const texts=['hello','hello hello',' hello','hé','x','中','日','xy','<s>hello','hello  hello','  hello  ','he\u0301','abc ab','a\u{1F600}b',''];
 for (const [name,j] of Object.entries(variants)) {
   const t=hf.Tokenizer.fromString(JSON.stringify(j));
   for (const x of texts) {
     const e=await t.encode(x,null,{addSpecialTokens:false}); const ids=Array.from(e.getIds());
     const d=await t.decode(ids,false);
     console.log(name, JSON.stringify(x), JSON.stringify(ids), JSON.stringify(d));
   }
   const e=await t.encode('hello',null,{addSpecialTokens:true}); const ids=Array.from(e.getIds());
   console.log(name,'ADD', JSON.stringify(ids), JSON.stringify(await t.decode(ids,false)), JSON.stringify(await t.decode(ids,true)));
 }
})();
